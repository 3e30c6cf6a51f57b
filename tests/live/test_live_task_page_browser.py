"""The task page follows Redis, and every action shows its outcome (issue 23), in headless Chromium against the
console under daphne with a real worker thread.

One browser, one console and one worker serve the whole module (set up once: they are the slow part); each test
uses queues of its own. Nothing here asserts a duration: each test waits, generously, for a state to be shown.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from browser_support import Console, open_chromium
from daphne_console import add_user, daphne_console

from taskq.queues import handles
from taskq.queues.engine import Client, Inspector, Registry, handler
from tests.worker.worker_support import FAST
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

EDITOR = "edna"
SETTLE = 60.0  # a guard: a live page agrees with a fresh load about a second after the last event
INDICATED = ("● live", "○ not live")  # what the top bar's indicator says once a page has decided

# The task page as it reads, the same way from a live page and a fresh load. Selectors that the page had before
# issue 23 too, so the test reproduces the faults against the old page.
READ_TASK_PAGE = """
var text = function (el) { return el ? el.textContent.replace(/\\s+/g, " ").trim() : null; };
var all = function (css) { return Array.prototype.slice.call(document.querySelectorAll(css)); };
var cells = function (tr) { return Array.prototype.map.call(tr.children, text).join(" | "); };
return {
  badge: text(document.querySelector("[data-live-badge]")),
  fields: all("dl.fields > dt, dl.fields > dd").map(text),
  attempts: all("table.timeline tbody tr").map(cells),
  history: all("[data-live-history] tr").map(function (tr) {
    var error = tr.children[4];
    var plain = error && error.textContent && !error.classList.contains("error-cell");
    return cells(tr) + (plain ? " [no error colour]" : "");
  }),
  actions: all("form.toolbar button[name=action]").filter(function (b) { return !b.hidden; }).map(function (b) {
    return b.value; }),
  payloadShown: all("h2").filter(function (h) { return h.textContent === "Payload" && h.offsetParent; }).length
};
"""


@pytest.fixture(scope="module")
def site(chromium, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The console (daphne), an editor's browser logged in, a worker on ``web``, and the engine's handles."""
    redis.Redis.from_url(redis_url).flushdb()  # once: the tests of this module share the database
    registry = Registry()

    @handler("flaky", registry=registry, retry_delay=lambda *_: 0.3)
    def flaky(task):
        if task.json().get("fail"):
            raise ValueError("flaky failed")

    workdir = tmp_path_factory.mktemp("task-page")
    with daphne_console(workdir, redis_url) as console_server:
        add_user(console_server.env, EDITOR, "view_console", "operate_console", "edit_task")
        with open_chromium(chromium, workdir / "profile") as driver:
            console = Console(driver, console_server.url, EDITOR, workdir)
            console.login("/")
            worker = Server(WorkerConfig(redis_url=redis_url, **{**FAST, "queues": {"web": 1}}), registry)
            worker.start()
            client, inspector = Client(redis_url), Inspector(redis_url, actor="ops@example.com")
            try:
                yield {"console": console, "client": client, "inspector": inspector}
            finally:
                worker.stop()
                client.close()
                inspector.close()
                handles.reset()


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


def settled(console: Console, path: str, script: str, condition: Any, what: str) -> dict[str, Any]:
    """Wait until the live page shows ``condition`` and reads as a fresh load; fail naming the differences."""
    diffs: dict[str, Any] = {"never shown": what}
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        shown = console.driver.execute_script(script)
        diffs = {"never shown": what, "last shown": shown}
        if condition(shown):
            fresh = console.read_fresh(path, script)
            diffs = {k: {"live": shown[k], "fresh": fresh[k]} for k in shown if shown[k] != fresh[k]}
            if not diffs:
                return dict(shown)
        time.sleep(0.2)
    pytest.fail(f"{path}: {what}: the live page differs from a fresh load: {diffs}")


def submit_confirmed(console: Console, button: str) -> None:
    """Click a submit button whose form asks for confirmation, answering yes in page script: the tests read what
    the dialog would say from the form's ``data-confirm``, and a failing test leaves no native dialog open to block
    the module's shared browser for the tests after it."""
    console.find(button)
    console.driver.execute_script(
        "window.confirm = function () { return true; }; document.querySelector(arguments[0]).click();", button
    )


def field(shown: dict[str, Any], name: str) -> str:
    fields = shown["fields"]
    return str(fields[fields.index(name) + 1]) if name in fields else ""


def test_task_page_follows_a_worker_through_retries_an_edit_and_its_deletion_on_success(site):
    """The live page equals a fresh load after a task retries and is archived, and again after it is edited, runs
    and is deleted on success: then the page stays, marked "completed and deleted (no retention)", with its final
    attempt, where it used to say "Not found (404)"."""
    console, inspector = site["console"], site["inspector"]
    inspector.pause_queue("web")  # the page opens before the first attempt
    task = site["client"].enqueue("flaky", {"fail": True}, queue="web", max_retry=1).id
    path = f"/queues/web/tasks/{task}/"
    console.get(path)
    live(console)
    console.driver.execute_script("window.notReloaded = true")
    inspector.unpause_queue("web")

    archived = settled(
        console, path, READ_TASK_PAGE, lambda s: s["badge"] == "archived" and len(s["attempts"]) == 2, "archived"
    )
    assert console.driver.execute_script("return window.notReloaded") is True
    assert field(archived, "Retries") == "retried 1 of 1, then archived"
    assert field(archived, "Next process time") == "—"
    assert re.search(r"flaky failed ?at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", field(archived, "Last error"))
    # Enqueued, started, to retry, back to pending, started, archived: each once (a page loaded during a transition
    # listed some twice).
    assert len(archived["history"]) == len(set(archived["history"])) == 6
    assert not any("[no error colour]" in row for row in archived["history"])
    assert "run" in archived["actions"] and "archive" not in archived["actions"]
    listed = console.read_fresh("/queues/web/?state=archived", "return document.querySelector('main').innerText")
    assert "retried 1 of 1, then archived" in listed  # the list words it as the task page does

    console.click("[data-live-edit] a")
    console.find("textarea[name=payload]")
    console.driver.execute_script("document.querySelector('textarea[name=payload]').value = '{\"fail\": false}'")
    submit_confirmed(console, "main form button[type=submit]")
    console.wait_for(lambda d: d.current_url.endswith(path), "the task page again")
    console.wait_text("edited and moved to pending", ".messages")
    done = settled(
        console, path, READ_TASK_PAGE, lambda s: s["badge"] == "completed" and len(s["attempts"]) == 3, "done"
    )
    page = console.text()
    assert "Not found" not in page and "completed and deleted (no retention)" in field(done, "State")
    assert "gone" in done["badge"] or console.find("[data-gone]")
    assert "succeeded" in done["attempts"][-1] and done["actions"] == [] and done["payloadShown"] == 0
    assert len(done["history"]) == len(set(done["history"]))


def test_bulk_bar_pager_and_confirmation_follow_the_live_counts(site):
    """The bulk bar, the pager and the confirmation name the tab's count now, not the count at page load (a pager
    stays while the tab holds more than a page: a fresh load shows none for one page)."""
    console, inspector, client = site["console"], site["inspector"], site["client"]
    ids = [client.enqueue("report:build", {"n": n}, queue="bulk").id for n in range(25)]
    for task_id in ids:
        inspector.archive_task("bulk", task_id)
    console.get("/queues/bulk/?state=archived&size=10")
    live(console)
    assert "All 25 archived" in console.text(".bulk")
    for task_id in ids[:5]:
        inspector.delete_task("bulk", task_id)
    console.wait_text("20", "nav.tabs a.current .count")
    console.wait_text("All 20 archived", ".bulk")
    console.wait_text("page 1 of 2 · 20 tasks", "nav.pager")
    assert console.find(".bulk form:has(button.danger)").get_attribute("data-confirm") == (
        "Delete all 20 archived tasks of “bulk”?"
    )
    submit_confirmed(console, ".bulk form button.danger")  # Delete all
    console.wait_text("20 archived tasks deleted")

    client.enqueue("report:build", {}, queue="bulk")  # the tab lists a task: new ones are added to its table
    console.get("/queues/bulk/?state=pending")
    live(console)
    client.enqueue("report:build", {}, queue="bulk")
    # The new row as the server renders it (not a placeholder): its time as the server's own times, UTC and 24-hour
    # (a placeholder read "6:25:57 AM" among them).
    console.wait_for(
        lambda d: re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", console.text("table.tasks tbody tr.live-new")),
        "the new row with its time",
    )


def test_every_page_says_whether_it_is_live_and_the_navigation_names_its_section(site):
    console, client = site["console"], site["client"]
    task = client.enqueue("report:build", {}, queue="navq").id
    pages = {
        "/": "Dashboard",
        "/queues/navq/": "Queues",
        f"/queues/navq/tasks/{task}/": "Queues",
        "/servers/": "Servers",
        "/schedulers/": "Schedulers",
        "/history/": "History",
        "/workflows/": "Workflows",
        "/search/?q=queue:navq": "Search",
        "/queues/navq/tasks/no-such-task/": None,  # a 404: no section
    }
    for path, section in pages.items():
        console.get(path)
        console.wait_for(lambda d: console.find("[data-live-status]").text in INDICATED, f"the indicator on {path}")
        current = [a.text for a in console.find_all(".topbar nav a.current")]
        assert current == ([section] if section else []), (path, current)
    console.get("/servers/")
    assert "0 minutes" not in console.text()  # a worker that started seconds ago: "just now"


def test_the_search_page_follows_its_matches_live(site):
    console, inspector, client = site["console"], site["inspector"], site["client"]
    ids = [client.enqueue("report:build", {"n": n}, queue="found").id for n in range(4)]
    console.get("/search/?q=queue:found")
    live(console)
    console.wait_text("4 matches")
    inspector.delete_task("found", ids[0])
    console.wait_text("3 matches")
    button = console.find("[data-live-search] button[value=delete]")
    assert button.get_attribute("data-confirm-action").startswith("Delete all 3 matching tasks whose state allows it?")
