"""What only a laid-out page shows, in a real headless Chromium: every chart's axis figures drawn whole inside their
drawing (the Latency chart's "500 ms" read "00 ms", cut at the drawing's left edge), at a desktop's width and a
phone's; a server's page holds the tasks it runs inside its card at 1,400 px; a task page's Expires counts down."""

from __future__ import annotations

import time

import pytest

from taskq.queues.engine import Keys
from taskq.queues.engine.broker.commands import run_command
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.series import gauge_flow

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 900, "deviceScaleFactor": 1, "mobile": True}

#: Each shown chart's axis texts that do not fit its drawing: [chart title, text, left, right, drawing's width].
CUT_AXIS_TEXT = """
const cut = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  if (svg.getBoundingClientRect().width === 0) continue;  // the other drawing of the pair, hidden
  const width = svg.viewBox.baseVal.width;
  for (const text of svg.querySelectorAll("text.axis")) {
    const box = text.getBBox();
    if (box.x < 0 || box.x + box.width > width) {
      cut.push([svg.getAttribute("aria-label"), text.textContent, box.x, box.x + box.width, width]);
    }
  }
}
return cut;
"""


def test_every_axis_figure_is_drawn_whole(console, seed, redis_client):
    seed.pending(queue="emails")
    # 2 s of latency: the axis reads 0 ms, 500 ms, 1 s, 1.5 s, 2 s; its widest figure is "500 ms".
    drive(gauge_flow(Keys(), {"emails": (1, 2.0)}, time.time()), lambda request: run_command(redis_client, request))
    console.login("/queues/emails/")
    for metrics in (None, PHONE):
        if metrics:
            console.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        console.get("/queues/emails/")
        console.find("svg.chart")
        labels = console.driver.execute_script(
            "return Array.from(document.querySelectorAll('svg.chart text.axis')).map(t => t.textContent)"
        )
        assert "500 ms" in labels
        assert console.driver.execute_script(CUT_AXIS_TEXT) == [], metrics


def test_the_dashboards_axis_figures_are_drawn_whole(console, seed, redis_client):
    from taskq.queues.engine.clock import utc_day

    seed.pending(queue="emails")
    emails = Keys().queue("emails")
    redis_client.set(emails.processed_on(utc_day(time.time())), 8000)  # the columns' axis: 2,000 ... 8,000
    redis_client.rpush(emails.pending, *(f"filler-{n}" for n in range(19_999)))  # the bars' axis ends at 20,000
    console.login("/")
    for metrics in (None, PHONE):
        if metrics:
            console.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        console.get("/")
        console.find("svg.chart")
        labels = console.driver.execute_script(
            "return Array.from(document.querySelectorAll('svg.chart text.axis')).map(t => t.textContent)"
        )
        assert "8,000" in labels and "20,000" in labels, labels
        assert console.driver.execute_script(CUT_AXIS_TEXT) == [], metrics


def test_the_server_pages_active_workers_stay_inside_their_card_at_1400_px(console, seed, start_worker):
    for n in range(2):
        seed.pending(f"hold:nightly-report-{n}", {"n": n}, queue="reports")
    server = start_worker(queues={"reports": 1}, concurrency=2)
    console.login("/servers/")
    console.driver.set_window_size(1400, 900)
    console.get(f"/servers/{server.config.server_id}/")
    console.wait_text("2 / 2 busy", "table.servers")  # the tasks it runs, listed open under it
    inner = console.find("table.servers details table.inner")
    card = console.find("section.card:has(table.servers)")
    measures = console.driver.execute_script(
        "var card = arguments[1], table = card.querySelector('table.servers');"
        "return [arguments[0].getBoundingClientRect().right, table.getBoundingClientRect().right,"
        " card.getBoundingClientRect().right, card.scrollWidth - card.clientWidth, window.innerWidth];",
        inner,
        card,
    )
    inner_right, table_right, card_right, overflow, width = measures
    assert width == 1400 and inner_right <= card_right and table_right <= card_right and overflow == 0, measures


def _expires_in(console) -> float:
    """The seconds the task page's Expires field says are left ("(in 9m 58s)")."""
    import re

    text = console.driver.find_element("xpath", "//dt[.='Expires']/following-sibling::dd[1]").text
    found = re.search(r"\(in (?:(\d+)m )?([\d.]+) ?s\)", text)
    assert found, text
    return 60 * int(found[1] or 0) + float(found[2])


def test_expires_counts_down_on_an_open_task_page(console, seed):
    task_id = seed.completed(queue="emails")  # kept for 600 s
    console.login(f"/queues/emails/tasks/{task_id}/")
    first = _expires_in(console)
    assert 500 < first <= 600
    # Not how fast: only that it moves on an open page (it stayed at what the page was rendered with).
    console.wait_for(lambda d: _expires_in(console) < first - 1, "Expires to count down")
    assert _expires_in(console) > 500
