"""The live dashboard in a real headless Chromium over daphne: the size chart, a row's size and memory, and a new
queue's row change without a reload. Waits for each state, never for a duration."""

from __future__ import annotations

import pytest
import test_live_browser
from test_live_browser import USER, asgi_console  # noqa: F401 - the daphne console fixture

from tests.browser.browser_support import Console

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture
def console_on_our_ports(monkeypatch, request):
    """The daphne console of the live browser tests, on this suite's ports (18301-18309)."""
    monkeypatch.setattr(test_live_browser, "PORTS", range(18301, 18310))
    return request.getfixturevalue("asgi_console")


def _cell(console: Console, queue: str, name: str) -> str:
    return console.find(f'#queues-table tr[data-live-for="{queue}"] [data-live-cell="{name}"]').get_attribute(
        "data-value")


def test_dashboard_chart_cells_and_new_queue_rows_follow_without_reload(console_on_our_ports, driver, moves,
                                                                         tmp_path):
    moves.enqueue("web")
    console = Console(driver, console_on_our_ports, USER, tmp_path)
    console.login("/")
    console.wait_for(lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live",
                     "the live indicator")
    driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    memory = int(_cell(console, "web", "memory"))
    chart = "[data-live-chart] svg.chart"
    assert "web · pending: 1" in console.find(chart).get_attribute("innerHTML")

    moves.enqueue("web", n=40)
    console.wait_for(lambda d: "web · pending: 41" in console.find(chart).get_attribute("innerHTML"),
                     "the size chart to show 41 pending")
    console.wait_for(lambda d: int(_cell(console, "web", "memory")) > memory, "the memory cell to grow")
    assert _cell(console, "web", "size") == "41"

    moves.enqueue("thumbnails", n=2)  # a queue the page was rendered without
    row = console.find('#queues-table tr[data-live-for="thumbnails"]')
    console.wait_for(lambda d: _cell(console, "thumbnails", "size") == "2", "the new row's size")
    assert row.find_element("css selector", "td.name a").get_attribute("href").endswith("/queues/thumbnails/")
    assert "thumbnails · pending: 2" in console.find(chart).get_attribute("innerHTML")
    assert not console.find_all("#queues-table tr[data-live-for] form")  # a viewer gets no actions
    assert driver.execute_script("return window.notReloaded") is True
