"""The queue page follows everything live and, once activity stops, reads as a fresh load of it: its paused state
(a pause writes no event; after a console restart too), and the rows of its tab, each with the cells a fresh load
shows, in its order: a retry row whose task failed again, new rows (never bare placeholders), and a tab that was
empty when the page opened. In headless Chromium against the console under a real daphne.

Nothing here asserts a duration: each test waits, generously, for the page to agree with a fresh load, and fails
naming the differences if it never does.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from daphne_console import USER, add_user

from taskq.queues.engine import Inspector
from tests.browser.browser_support import Console

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

QUEUE = "tables"
OPERATOR = "otto"
SETTLE = 60.0  # a guard: a page agrees within a few seconds of the last change (its reconnect, at most 10 s)

# What the queue page shows of its state and its tab, read the same way from the live page and a fresh load: the
# visible badge and buttons of the banner, and every row still listed (a row struck through as gone is not), in
# order, with its cells.
READ_TAB = """
var text = function (el) { return el.textContent.replace(/\\s+/g, " ").trim(); };
var visible = function (css) {
  return Array.prototype.filter.call(document.querySelectorAll(css), function (el) { return !el.closest("[hidden]"); });
};
return {
  state: visible(".banner-title .badge, .banner-title form button").map(text),
  rows: Array.prototype.map.call(document.querySelectorAll("table.tasks tbody tr[data-live-task]:not(.live-left)"),
    function (tr) { return Array.prototype.map.call(tr.children, text).join(" | "); }),
  empty: visible("div[data-live-resync] > p.empty").map(text)
};
"""


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


def agrees(console: Console, path: str) -> dict[str, Any]:
    """Wait for the open page to read as a fresh load of ``path``; return what both show."""
    diffs: dict[str, Any] = {"never read": True}
    shown: dict[str, Any] = {}
    deadline = time.monotonic() + SETTLE
    while diffs and time.monotonic() < deadline:
        shown = console.driver.execute_script(READ_TAB)
        fresh = console.read_fresh(path, READ_TAB)
        diffs = {key: {"live": shown[key], "fresh": fresh[key]} for key in fresh if shown[key] != fresh[key]}
    assert not diffs, f"{path}: the live page differs from a fresh load: {diffs}"
    assert console.driver.execute_script("return window.notReloaded") is True
    return shown


def open_live(console: Console, path: str) -> None:
    console.get(path)
    live(console)
    console.driver.execute_script("window.notReloaded = true")  # gone if the page reloads


@pytest.fixture
def operator(daphne, driver, tmp_path) -> Console:
    add_user(daphne.env, OPERATOR, "view_console", "operate_console")
    console = Console(driver, daphne.url, OPERATOR, tmp_path)
    console.login("/")
    return console


@pytest.fixture
def viewer(daphne, driver, tmp_path) -> Console:
    """A viewer: no actions, and tables without the selection column."""
    console = Console(driver, daphne.url, USER, tmp_path)
    console.login("/")
    return console


@pytest.fixture
def inspector(live_engine, redis_url):
    engine = Inspector(redis_url, actor="ops@example.com")
    yield engine
    engine.close()


def test_the_queue_page_follows_pause_and_resume_and_a_console_restart(daphne, operator, moves, inspector):
    path = f"/queues/{QUEUE}/"
    moves.enqueue(QUEUE)
    inspector.pause_queue(QUEUE)
    open_live(operator, path)
    assert agrees(operator, path)["state"] == ["paused", "Resume"]

    inspector.unpause_queue(QUEUE)  # as `tasks queue resume` does: no event, nothing else moves
    assert agrees(operator, path)["state"] == ["run", "Pause"]
    inspector.pause_queue(QUEUE)
    moves.enqueue(QUEUE)  # and with the counts moving
    assert agrees(operator, path)["state"] == ["paused", "Resume"]

    with daphne.down():  # resumed while the console was down: the page reconnects and follows
        operator.wait_for(lambda d: d.execute_script("return window.taskqLive.status") != "live", "the page to notice")
        inspector.unpause_queue(QUEUE)
    live(operator)
    assert agrees(operator, path)["state"] == ["run", "Pause"]


def test_a_retry_row_follows_a_task_that_failed_again(viewer, moves, inspector):
    (task,) = moves.enqueue(QUEUE, max_retry=2)
    leases = moves.start(QUEUE)
    moves.broker.run(moves.ops.retry(QUEUE, task, leases[0][1], time.time() + 600, "first", worker="test-worker"))
    path = f"/queues/{QUEUE}/?state=retry"
    open_live(viewer, path)
    before = agrees(viewer, path)["rows"]
    assert "retry 1 of 2 due" in before[0] and "first" in before[0]

    inspector.run_task(QUEUE, task)  # what the forwarder does when it is due: back to pending, then it fails again
    [(again, token)] = moves.start(QUEUE)
    assert again == task
    moves.broker.run(moves.ops.retry(QUEUE, task, token, time.time() + 1200, "second", worker="test-worker"))
    after = agrees(viewer, path)["rows"]
    assert len(after) == 1 and "retry 2 of 2 due" in after[0] and "second" in after[0] and after != before


def test_new_rows_arrive_whole_and_in_a_fresh_loads_order(operator, moves):
    moves.enqueue(QUEUE)
    path = f"/queues/{QUEUE}/?state=pending"
    open_live(operator, path)
    agrees(operator, path)
    ids = [moves.client.enqueue("report:build", {"n": n, "for": "ada"}, queue=QUEUE).id for n in range(3)]
    rows = agrees(operator, path)["rows"]
    assert len(rows) == 4 and all('"for":"ada"' in row for row in rows[1:])  # payloads, not placeholders
    assert not operator.find_all("table.tasks tbody td.muted")  # no "new · <time>" placeholder cell
    assert all(operator.find_all(f'tr[data-live-task="{task_id}"] input[name=task_ids]') for task_id in ids)


def test_a_tab_empty_when_the_page_opened_lists_what_arrives(operator, moves):
    path = f"/queues/{QUEUE}/?state=completed&size=20"
    moves.enqueue(QUEUE)  # the queue exists, its completed tab is empty
    open_live(operator, path)
    assert agrees(operator, path)["empty"] == ["No completed tasks."]
    for _ in range(3):  # 25 completions: more than the page holds, so it gets a pager too
        moves.enqueue(QUEUE, n=8, retention=600)
        moves.complete(QUEUE, moves.start(QUEUE, k=9))
    shown = agrees(operator, path)
    assert len(shown["rows"]) == 20 and not shown["empty"]
    operator.wait_text("page 1 of 2", "nav.pager")


# The workflows list: each section's queue and rows (id, state, progress, failing step), as the page shows them.
READ_WORKFLOWS = """
var text = function (el) { return el.textContent.replace(/\\s+/g, " ").trim(); };
return Array.prototype.map.call(document.querySelectorAll("main section.card"), function (section) {
  return Array.prototype.map.call(section.querySelectorAll("h2, tbody tr"), text);
});
"""


def test_the_workflows_list_follows_new_workflows_and_their_progress(operator, moves):
    from taskq.queues.engine import chain, sig

    moves.client.submit(chain(sig("fetch"), sig("store")), queue=QUEUE, workflow_id="wf-first")
    operator.get("/workflows/")
    live(operator)
    operator.driver.execute_script("window.notReloaded = true")
    moves.client.submit(chain(sig("fetch"), sig("store")), queue=QUEUE, workflow_id="wf-second")
    moves.complete(QUEUE, moves.start(QUEUE))  # the first workflow's first step succeeds

    def agree(_d: Any) -> Any:
        shown = operator.driver.execute_script(READ_WORKFLOWS)
        return shown if shown == operator.read_fresh("/workflows/", READ_WORKFLOWS) else None

    shown = operator.wait_for(agree, "the live list to read as a fresh load", timeout=SETTLE)
    assert [row.split(" ")[0] for row in shown[0][1:]] == ["wf-second", "wf-first"]
    assert "1 of 2 done" in shown[0][2]
    assert operator.driver.execute_script("return window.notReloaded") is True
