"""The live dashboard in a real headless Chromium over daphne: the size chart, a row's size and memory, and a new
queue's row change without a reload. Waits for each state, never for a duration."""

from __future__ import annotations

import pytest
from daphne_console import USER

from tests.browser.browser_support import Console

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


# Read in one script call each: live.js replaces the chart's markup while we look (a stale element otherwise).
def _cell(console: Console, queue: str, name: str) -> str | None:
    return console.driver.execute_script(
        "var td = document.querySelector('#queues-table tr[data-live-for=\"' + arguments[0] + '\"] "
        "[data-live-cell=\"' + arguments[1] + '\"]'); return td && td.getAttribute('data-value');",
        queue,
        name,
    )


def _chart(console: Console) -> str:
    return console.driver.execute_script("return document.querySelector('[data-live-chart]').innerHTML")


def test_dashboard_chart_cells_and_new_queue_rows_follow_without_reload(asgi_console, driver, moves, tmp_path):
    moves.enqueue("web")
    console = Console(driver, asgi_console, USER, tmp_path)
    console.login("/")
    console.wait_for(
        lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live", "the live indicator"
    )
    driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    memory = int(_cell(console, "web", "memory"))
    assert "web · pending: 1" in _chart(console)

    moves.enqueue("web", n=40)
    console.wait_for(lambda d: "web · pending: 41" in _chart(console), "the size chart to show 41 pending")
    console.wait_for(lambda d: int(_cell(console, "web", "memory")) > memory, "the memory cell to grow")
    assert _cell(console, "web", "size") == "41"

    moves.enqueue("thumbnails", n=2)  # a queue the page was rendered without
    console.wait_for(lambda d: _cell(console, "thumbnails", "size") == "2", "the new queue's row")
    link = console.find('#queues-table tr[data-live-for="thumbnails"] td.name a')
    assert link.get_attribute("href").endswith("/queues/thumbnails/") and link.text == "thumbnails"
    console.wait_for(lambda d: "thumbnails · pending: 2" in _chart(console), "the new queue's bar")
    assert not console.find_all("#queues-table tr[data-live-for] form")  # a viewer gets no actions
    assert driver.execute_script("return window.notReloaded") is True


def test_servers_page_lists_a_new_server_without_reload(asgi_console, driver, live_engine, redis_url, tmp_path):
    from tests.cli.helpers import Seed

    console = Console(driver, asgi_console, USER, tmp_path)
    console.login("/servers/")
    console.wait_for(
        lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live", "the live indicator"
    )
    driver.execute_script("window.notReloaded = true")
    assert "No worker is running" in console.text()
    seed = Seed(redis_url)
    try:
        seed.server("host-1:42")
        row = console.find('tr[data-live-server="host-1:42"]')
        assert row.find_element("css selector", "td.name").text == "host-1:42"
        console.wait_for(lambda d: "No worker is running" not in console.text(), "the empty note to go")
        assert driver.execute_script("return window.notReloaded") is True
    finally:
        seed.close()
