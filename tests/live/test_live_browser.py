"""The live console in a real headless Chromium, served over ASGI by daphne (WebSockets need ASGI; the WSGI
live_server of the other browser tests cannot upgrade a socket).

No assertion is about time: the test waits (generously) for each state, never for a duration.
"""

from __future__ import annotations

import time

import pytest
from daphne_console import USER
from live_support import WAIT

from tests.browser.browser_support import Console

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


def _badge(console: Console) -> str:
    return console.find("[data-live-badge]").text


def test_task_page_shows_pending_active_completed_without_reload(asgi_console, driver, moves, tmp_path):
    task = moves.enqueue("web", retention=600)[0]
    console = Console(driver, asgi_console, USER, tmp_path)
    console.login(f"/queues/web/tasks/{task}/")
    console.wait_for(lambda d: _badge(console) == "pending", "the pending badge")
    console.wait_for(
        lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live",
        "the live indicator",
        WAIT,
    )
    assert console.find("[data-live-status]").text.endswith("live")
    driver.execute_script("window.notReloaded = true")  # gone if the page reloads

    leases = moves.start("web")
    console.wait_for(lambda d: _badge(console) == "active", "the active badge")
    moves.complete("web", leases, result=b'{"thumbnail": "done"}')
    console.wait_for(lambda d: _badge(console) == "completed", "the completed badge")
    console.wait_text('"thumbnail": "done"', "[data-live-result]")
    assert driver.execute_script("return window.notReloaded") is True
    assert console.find("[data-live-field=state]").text.startswith("completed")


def test_queue_page_lists_new_rows_marks_leaving_rows_and_follows_counts(asgi_console, driver, moves, tmp_path):
    first = moves.enqueue("web")[0]
    console = Console(driver, asgi_console, USER, tmp_path)
    console.login("/queues/web/?state=pending")
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "live")
    driver.execute_script("window.notReloaded = true")

    second = moves.enqueue("web")[0]  # a new pending task appears on top, the tab count follows
    console.find(f'tr[data-live-task="{second}"]')
    console.wait_text("2", "[data-live-count=pending]")
    moves.start("web", k=1)  # the oldest (first) goes active: its row is marked as gone there
    console.wait_for(
        lambda d: "live-left" in console.find(f'tr[data-live-task="{first}"]').get_attribute("class"),
        "the row of the started task to be marked",
    )
    console.wait_text("→ active", f'tr[data-live-task="{first}"]')
    console.wait_text("1", "[data-live-count=active]")
    assert driver.execute_script("return window.notReloaded") is True


def test_time_charts_follow_what_workers_write_without_reload(asgi_console, driver, moves, redis_client, tmp_path):
    """The queue page's charts are fetched again when live messages arrive: attempts a worker writes to the
    series show up in the throughput chart, and the page is never reloaded."""
    import json

    from taskq.queues.engine import Keys
    from taskq.queues.engine.broker.commands import run_command
    from taskq.queues.engine.sans_io import drive
    from taskq.queues.engine.series import SeriesTally, flush_flow

    moves.enqueue("web")
    console = Console(driver, asgi_console, USER, tmp_path)
    console.login("/queues/web/?state=pending")
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "live")
    assert "succeeded: 4" not in console.find("[data-live-series]").get_attribute("innerHTML")
    driver.execute_script("window.notReloaded = true")
    tally = SeriesTally()
    for _ in range(4):
        tally.finished("web", "resize", "ok", 3, 0, time.time())
    drive(flush_flow(Keys(), tally.drain()), lambda request: run_command(redis_client, request))

    def redrawn(d) -> bool:
        if "succeeded: 4" in console.find("[data-live-series]").get_attribute("innerHTML"):
            return True
        moves.enqueue("web")  # a live message; the page redraws its charts at most every 5 s
        return False

    console.wait_for(redrawn, "the throughput chart to show the four attempts", timeout=4 * WAIT)
    assert driver.execute_script("return window.notReloaded") is True
    assert json.loads(driver.execute_script("return JSON.stringify(window.taskqLive.seriesRefreshes)")) >= 1


def test_a_page_the_server_cannot_serve_shows_it_is_not_live_and_comes_back(driver, tmp_path, transactional_db):
    """Issue 16: a page whose socket the server could not serve sat frozen, still marked live. With the Redis of
    its console gone, the page says it is reconnecting; once Redis is back, it is live again and follows updates."""
    from daphne_console import daphne_console

    from taskq.queues.engine import Client
    from tests.ports import free_port
    from tests.topology.topology_support import _require, _start, stop

    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"  # a redis-server of this test's own, which it stops and starts again
    servers = [_start([], [_require("redis-server"), "--save", ""], tmp_path / "redis", port)]

    def enqueue() -> None:
        with Client(url) as client:
            client.enqueue("live:test", {}, queue="web")

    try:
        enqueue()
        with daphne_console(tmp_path, url) as console_server:
            console = Console(driver, console_server.url, USER, tmp_path)
            console.login("/queues/web/?state=pending")

            def status(d) -> str:
                return d.execute_script("return window.taskqLive.status")

            console.wait_for(lambda d: status(d) == "live", "the page to be live")
            stop(servers.pop())
            console.wait_for(lambda d: status(d) == "reconnecting", "the page to say it is not live")
            assert "reconnecting" in console.find("[data-live-status]").text
            servers.append(_start([], [_require("redis-server"), "--save", ""], tmp_path / "redis", port))
            console.wait_for(lambda d: status(d) == "live", "the page to be live again", timeout=3 * WAIT)
            enqueue()  # the restarted Redis is empty: this task is the queue's only one
            console.wait_text("1", "[data-live-count=pending]")
    finally:
        for server in servers:
            stop(server)
