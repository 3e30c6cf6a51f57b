"""A phone (375 px) in a real headless Chromium: chart text stays readable (an SVG drawn for a desktop card shrank
its 12 px text to about 5 px), and task and search tables show every column of a task on the screen, each named:
stacked, a task a block and a column a line (they showed the checkbox and the id; the rest scrolled sideways)."""

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

#: Per cell of the first row of a task table: its column's header, the label shown before it, its left and right
#: edges and its height (px); and how far the table scrolls sideways in its box.
CELLS = """
const table = document.querySelector(arguments[0]);
const headers = Array.from(table.querySelectorAll("thead th")).map(th => th.textContent.trim());
const cells = Array.from(table.querySelectorAll("tbody tr:first-child td")).map((td, i) => {
  const box = td.getBoundingClientRect();
  const label = getComputedStyle(td, "::before").content;
  return [headers[i], label === "none" ? "" : JSON.parse(label), box.left, box.right, box.height];
});
const scroller = table.closest(".table-scroll");
return [cells, scroller.scrollWidth - scroller.clientWidth];
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
    for path in ("/queues/emails/?state=retry", "/search/?q=type:email:*"):
        console.get(path)
        console.find("h1")
        cells, sideways = console.driver.execute_script(CELLS, "table.tasks")
        assert len(cells) >= 7 and sideways == 0, (path, cells, sideways)
        off_screen = [
            (name, round(left), round(right)) for name, _l, left, right, _h in cells if left < 0 or right > 375
        ]
        unnamed = [(name, label) for name, label, *_ in cells if name and label != name]
        tall = [(name, round(height)) for name, _l, _left, _right, height in cells if height > 120]
        assert off_screen == [] and unnamed == [] and tall == [], f"{path}: {off_screen}, {unnamed}, {tall}"
        assert console.driver.execute_script("return document.documentElement.scrollWidth") <= 375
    console.get("/queues/emails/?state=retry")
    console.screenshot("queue-phone", width=375)
    console.get("/")
    console.screenshot("dashboard-phone", width=375)
    console.get("/search/?q=type:email:*")
    console.screenshot("search-phone", width=375)
