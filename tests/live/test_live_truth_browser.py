"""The live pages tell the truth (issue 16): the queue page and the dashboard stay open in headless Chromium
while a mixed workload runs for 20 s; once it has settled, every figure, tab and table row of each live page
equals a fresh load of the same page. Nothing here waits for a duration: the workload runs for its 20 s, then the
test waits for the pages to agree (and fails, naming the differences, if they never do)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from daphne_console import USER
from live_support import READ_PAGE

from taskq.queues.engine import Inspector
from tests.browser.browser_support import Console

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

QUEUE = "web"
WORKLOAD_SECONDS = 20.0
SETTLE_TIMEOUT = 60.0  # a guard: the pages agree within about a second of the last event
RETAINED_AT_MOST = 35  # the completed tab lists them all on its one page of 100
TYPES = ("email:send", "thumbnail:resize", "report:build")
OUTCOMES = ("retained", "done", "archive", "retry", "scheduled", "delete_pending", "archive", "delete_archived")
QUEUE_PAGE = f"/queues/{QUEUE}/?state=completed&size=100"


class Workload:
    """Drives the queue like workers, producers and an operator would, task by task (so each dequeue takes the
    task just enqueued): successes kept for their retention and deleted on success, failures that archive and
    that retry in an hour, scheduled tasks, deletes by the Inspector, and one task waiting for a scheduled one."""

    def __init__(self, moves: Any, redis_url: str) -> None:
        self.moves, self.ops = moves, moves.ops
        self.inspector = Inspector(redis_url, actor="ops@example.com")
        self.retained = 0
        self.archived: list[str] = []  # archived and not deleted yet
        self.deleted = 0
        self.done = threading.Event()

    def enqueue(self, n: int, **options: Any) -> str:
        return self.moves.client.enqueue(TYPES[n % len(TYPES)], {"n": n}, queue=QUEUE, **options).id

    def step(self, n: int) -> None:
        outcome = OUTCOMES[n % len(OUTCOMES)]
        if outcome == "retained" and self.retained >= RETAINED_AT_MOST:
            outcome = "done"
        if outcome == "scheduled":
            self.enqueue(n, process_in=3600)
        elif outcome == "delete_pending":
            self.inspector.delete_task(QUEUE, self.enqueue(n))
        elif outcome == "delete_archived":
            if self.archived:
                self.inspector.delete_task(QUEUE, self.archived.pop())
                self.deleted += 1
        else:
            self.enqueue(n, retention=600) if outcome == "retained" else self.enqueue(n)
            [(task_id, token)] = self.moves.start(QUEUE)
            if outcome == "retained":
                self.moves.complete(QUEUE, [(task_id, token)])
                self.retained += 1
            elif outcome == "done":
                self.moves.broker.run(self.ops.done(QUEUE, [(task_id, token)], "test-worker"))
            elif outcome == "archive":
                self.moves.broker.run(self.ops.archive(QUEUE, task_id, token, "boom", worker="test-worker"))
                self.archived.append(task_id)
            else:
                retry_at = time.time() + 3600
                self.moves.broker.run(self.ops.retry(QUEUE, task_id, token, retry_at, "later", worker="test-worker"))

    def run(self) -> int:
        """Steps for WORKLOAD_SECONDS (at most ~20 a second, like a busy but readable queue); returns how many."""
        later = self.enqueue(0, process_in=3600)
        self.moves.client.enqueue("report:build", {}, queue=QUEUE, after=[later])  # waits for a scheduled task
        began, n = time.monotonic(), 0
        while time.monotonic() - began < WORKLOAD_SECONDS:
            n += 1
            self.step(n)
            time.sleep(0.05)
        # One of the retained completions is deleted by the operator: its live row must be marked as gone.
        completed = self.inspector.list_tasks(QUEUE, "completed", size=1)
        if completed:
            self.inspector.delete_task(QUEUE, completed[0].id)
        self.inspector.close()
        return n


def read(console: Console, handle: str) -> dict[str, Any]:
    console.driver.switch_to.window(handle)
    return console.driver.execute_script(READ_PAGE)


def fresh(console: Console, path: str) -> dict[str, Any]:
    """The page as a fresh load shows it."""
    return dict(console.read_fresh(path, READ_PAGE))


def differences(live: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    return {key: {"live": live[key], "fresh": loaded[key]} for key in live if live[key] != loaded[key]}


def test_live_queue_page_and_dashboard_equal_a_fresh_load_after_a_mixed_workload(
    asgi_console, driver, moves, redis_url, tmp_path
):
    moves.enqueue(QUEUE, retention=600)
    moves.complete(QUEUE, moves.start(QUEUE))  # the tab has a row before the page opens
    console = Console(driver, asgi_console, USER, tmp_path)
    console.login(QUEUE_PAGE)
    pages = {QUEUE_PAGE: driver.current_window_handle}
    driver.switch_to.new_window("tab")
    console.get("/")
    pages["/"] = driver.current_window_handle
    for handle in pages.values():
        driver.switch_to.window(handle)
        console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")
        driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    before = read(console, pages[QUEUE_PAGE])

    workload = Workload(moves, redis_url)
    steps = workload.run()
    assert steps >= 100 and workload.retained > 1 and workload.archived and workload.deleted  # it did what it says

    for path, handle in pages.items():
        diffs: dict[str, Any] = {}
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:  # wait for the live page to settle on what a fresh load shows
            diffs = differences(read(console, handle), fresh(console, path))
            if not diffs:
                break
        assert not diffs, f"{path}: the live page differs from a fresh load: {diffs}"
        assert driver.execute_script("return window.notReloaded") is True

    after = read(console, pages[QUEUE_PAGE])
    assert after["figures"] != before["figures"] and after["types"] != before["types"]  # they did move live
    assert len(after["tasks"]) > len(before["tasks"])  # retained completions were added; none deleted on success
