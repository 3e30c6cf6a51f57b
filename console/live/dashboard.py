"""The dashboard's live snapshot: the size chart and every queue's row of the queues table, as the page shows them.

Counts move with every coalesced update (250 ms), but latency, memory, the error rate, the size chart and which
queues exist need the whole ``Inspector.queue_infos`` batch: three pipelined round trips for all queues, however
many. The hub reads it at most every ``DASHBOARD_INTERVAL`` seconds while a dashboard is open and events
arrived, and every ``DASHBOARD_IDLE`` seconds otherwise (latency grows while nothing happens), and sends it only
when it differs from the last one sent.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from ..views.dashboard import QueueRow, size_chart

DASHBOARD_INTERVAL = 2.0  # seconds between two snapshots, at least
DASHBOARD_IDLE = 5.0  # seconds between two snapshots when no event arrived


def dashboard_snapshot(inspector: Any) -> dict[str, Any]:
    """``{"kind": "dashboard", "chart": "<svg…>", "rows": [{"queue", "href", "paused", "cells"}]}``, where
    ``cells`` maps a table column to ``[sort value, shown text]``. The chart is the page's own SVG (labels escaped
    server-side), so the page swaps it in as is."""
    infos = inspector.queue_infos(inspector.queues())
    return {"kind": "dashboard", "chart": str(size_chart(infos)),
            "rows": [{"queue": info.queue, "href": reverse("queue", args=[info.queue]), "paused": info.paused,
                        "cells": QueueRow(info).cells} for info in infos]}
