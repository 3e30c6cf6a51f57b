"""The dashboard's live snapshot: the size chart and every queue's row of the queues table, as the page shows them.

Counts move with every coalesced update (250 ms), but latency, memory, the error rate, the size chart and which
queues exist need the whole ``Inspector.queue_infos`` batch: three pipelined round trips for all queues, however
many. The hub reads it at most every ``DASHBOARD_INTERVAL`` seconds while a dashboard is open and events
arrived, and every ``DASHBOARD_IDLE`` seconds otherwise (latency grows while nothing happens), and sends only
what differs from the last round (``DashboardDelta``): with hundreds of queues, most rows and often the chart
stay the same.

Deliberately shares its name with ``console/views/dashboard.py`` and ``console/rq/dashboard.py``: the three are
the dashboard page's parts (its live snapshot here, its view, its RQ section), each in its package.
"""

from __future__ import annotations

import json
from typing import Any

from django.urls import reverse

from ..renderers import QueueRow, size_chart

DASHBOARD_INTERVAL = 1.0  # seconds between two snapshots, at least: a page is about 1 s behind at most
DASHBOARD_IDLE = 5.0  # seconds between two snapshots when no event arrived


def dashboard_snapshot(inspector: Any) -> dict[str, Any]:
    """``{"kind": "dashboard", "listed": [every queue], "chart": "<svg…>", "rows": [{"queue", "href", "paused",
    "cells"}]}``, where ``cells`` maps a table column to ``[sort value, shown text]``. The chart is the page's own
    SVG (labels escaped server-side), so the page swaps it in as is. A page drops the rows of queues not listed."""
    return snapshot_of(inspector.queue_infos(inspector.queues()))


def snapshot_of(infos: list[Any]) -> dict[str, Any]:
    """``dashboard_snapshot`` of every queue's ``QueueInfo`` read already (the polling hub's round reads them once)."""
    return {
        "kind": "dashboard",
        "listed": [info.queue for info in infos],
        "chart": str(size_chart(infos)),
        "rows": [
            {
                "queue": info.queue,
                "href": reverse("taskq:queue", args=[info.queue]),
                "paused": info.paused,
                "cells": QueueRow(info).cells,
            }
            for info in infos
        ],
    }


class DashboardDelta:
    """What changed since the last snapshot sent to the dashboard group: the rows that differ, the chart if it
    differs, and always the list of queues (so pages drop the rows of queues that went). ``reset`` makes the next
    delta a full snapshot (a page joined: it got a full snapshot at that moment, but the group's last state may be
    older than it, so a row changing back to that state would otherwise not be sent)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.rows: dict[str, str] = {}
        self.chart = ""

    def __call__(self, snapshot: dict[str, Any]) -> dict[str, Any] | None:
        rows = {row["queue"]: json.dumps(row, sort_keys=True) for row in snapshot["rows"]}
        changed = [row for row in snapshot["rows"] if self.rows.get(row["queue"]) != rows[row["queue"]]]
        chart_changed = snapshot["chart"] != self.chart
        if not changed and not chart_changed and rows.keys() == self.rows.keys():
            return None
        self.rows, self.chart = rows, snapshot["chart"]
        delta = {"kind": "dashboard", "listed": snapshot["listed"], "rows": changed}
        if chart_changed:
            delta["chart"] = snapshot["chart"]
        return delta
