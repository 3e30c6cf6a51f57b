"""Live pages that no event replay can bring up to date read themselves again from the server (issue 23), in
headless Chromium against the console under a real daphne.

- A queue page open while its console was down and the event exporter trimmed the stream past the page's cursor
  ends as a fresh load shows it, with no "reload" notice (it used to say "Some changes could not be replayed" and
  list "No completed tasks." beside a count of 34).
- The schedulers page shows a run's outcome and a pause as they happen.

Nothing here asserts a duration: each test waits, generously, for a state to be shown.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from daphne_console import USER
from live_support import READ_PAGE

from taskq.queues.engine.export_store import parse_stream_id
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.scheduler_store import SchedulerStore
from tests.browser.browser_support import Console
from taskq.worker.event_exporter import EventExporter

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

QUEUE = "resume"
PAGE = f"/queues/{QUEUE}/?state=completed&size=100"
SETTLE = 60.0  # a guard: the page reconnects within its retry delay (at most 10 s) and agrees about a second later
ROUNDS = 4  # of work and export while the console is down, at most: 80 retained rows, within the page's 100


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


def work(moves: Any) -> None:
    """A round of a worker's work: ten tasks kept for their retention (rows of the completed tab) and thirty
    deleted on success, 120 events."""
    moves.enqueue(QUEUE, n=10, retention=600)
    moves.complete(QUEUE, moves.start(QUEUE, k=10))
    moves.enqueue(QUEUE, n=30)
    moves.broker.run(moves.ops.done(QUEUE, moves.start(QUEUE, k=30), "test-worker"))


def test_a_queue_page_resumes_past_a_stream_the_exporter_trimmed_while_its_console_was_down(
    daphne, driver, moves, tmp_path
):
    moves.enqueue(QUEUE, retention=600)
    moves.complete(QUEUE, moves.start(QUEUE))  # the tab lists a row when the page opens
    console = Console(driver, daphne.url, USER, tmp_path)
    console.login(PAGE)
    live(console)
    driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    cursor = parse_stream_id(json.loads(console.find("[data-live]").get_attribute("data-live-cursor"))[QUEUE])
    exporter = EventExporter(moves.broker, str(tmp_path / "events"), "test-exporter", flush_age=0)

    with daphne.down():
        console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") != "live", "the page to notice")
        # The demo's exporter at work: each round it stores the events and commits their offset, and the next
        # events trim the stream at it (MINID ~: whole stream nodes at a time), until the page's cursor is gone.
        for _ in range(ROUNDS):
            work(moves)
            exporter.run_once()
            work(moves)
            (status,) = exporter.store.status().queues
            if status.first_id and parse_stream_id(status.first_id) > cursor:
                break
        else:
            pytest.fail(f"the stream was not trimmed past the page's cursor: {status}")

    diffs: dict[str, Any] = {"never read": True}
    deadline = time.monotonic() + SETTLE
    while diffs and time.monotonic() < deadline:
        shown = driver.execute_script(READ_PAGE)
        fresh = console.read_fresh(PAGE, READ_PAGE)
        diffs = {key: {"live": shown.get(key), "fresh": fresh[key]} for key in fresh if shown.get(key) != fresh[key]}
        time.sleep(0.2)
    assert not diffs, f"the live page differs from a fresh load: {diffs}"
    assert len(fresh["tasks"]) > 1  # the rows that came while the console was down are listed
    assert driver.execute_script("return window.notReloaded") is True
    assert driver.execute_script("return window.taskqLive.status") == "live"
    assert console.find_all(".live-note") == []  # no "reload" notice


def test_the_schedulers_page_shows_a_run_and_a_pause_as_they_happen(daphne, driver, moves, tmp_path):
    store = SchedulerStore(moves.broker)
    entry = make_entry("@daily", "report:refresh", queue="cronq", source="admin")
    store.write_config([entry])
    console = Console(driver, daphne.url, USER, tmp_path)
    console.login("/schedulers/")
    live(console)
    driver.execute_script("window.notReloaded = true")
    row = f"#entry-{entry.id}"
    assert "not yet" in console.text(row)

    store.run_now(entry, "test")
    console.wait_for(lambda d: "enqueued" in console.text(row), "the run enqueued")
    moves.complete("cronq", moves.start("cronq"))
    console.wait_for(lambda d: "completed" in console.text(row), "the run's outcome")
    store.pause(entry, "test")
    console.wait_for(lambda d: console.find_all(f"{row} .badge.paused"), "the entry paused")
    assert driver.execute_script("return window.notReloaded") is True
