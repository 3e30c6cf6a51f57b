"""A phone (375 px) in a real headless Chromium: chart text stays readable (an SVG drawn for a desktop card shrank
its 12 px text to about 5 px), and task and search tables keep the columns an operator needs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 900, "deviceScaleFactor": 1, "mobile": True}

#: The smallest text of each chart shown (hidden drawings left out): its font size times the drawing's scale.
SMALLEST_CHART_TEXT = """
return Array.from(document.querySelectorAll("svg.chart")).filter(s => s.getBoundingClientRect().width > 0)
  .map(s => {
    const scale = s.getBoundingClientRect().width / s.viewBox.baseVal.width;
    const sizes = Array.from(s.querySelectorAll("text")).map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    return Math.min(...sizes);
  });
"""

#: Per column of the first task table: its header, its width and its first cell's height (px).
COLUMNS = """
const table = document.querySelector(arguments[0]);
const cells = Array.from(table.querySelectorAll("tbody tr:first-child td"));
return Array.from(table.querySelectorAll("thead th")).map((th, i) => [th.textContent.trim(),
  th.getBoundingClientRect().width, cells[i].getBoundingClientRect().height]);
"""


def test_charts_and_task_tables_read_on_a_phone(console, seed):
    for n in range(3):
        seed.retry(queue="emails", task_type="email:deliver", payload={"to": f"user{n}@example.com", "body": "x" * 300},
                   error="SMTP 451 greylisted, try again later")  # fmt: skip
    console.login("/")
    console.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    for path in ("/", "/?range=24h", "/queues/emails/?state=retry", "/queues/emails/types/email:deliver/"):
        console.get(path)
        console.find("h1")
        sizes = console.driver.execute_script(SMALLEST_CHART_TEXT)
        assert sizes and min(sizes) >= 10, f"{path}: chart text of {min(sizes):.1f} px"
    for path, table in (("/queues/emails/?state=retry", "table.tasks"), ("/search/?q=type:email:*", "table.data")):
        console.get(path)
        console.find("h1")
        columns = console.driver.execute_script(COLUMNS, table)
        narrow = [(name, round(width)) for name, width, _h in columns if name and width < 60]
        tall = [(name, round(height)) for name, _w, height in columns if height > 120]
        assert narrow == [] and tall == [], f"{path}: squeezed columns {narrow}, tall cells {tall}"
        assert console.driver.execute_script("return document.documentElement.scrollWidth") <= 375
    console.get("/queues/emails/?state=retry")
    console.screenshot("queue-phone", width=375)
    console.get("/")
    console.screenshot("dashboard-phone", width=375)
    console.get("/search/?q=type:email:*")
    console.screenshot("search-phone", width=375)
