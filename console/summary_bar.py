"""The summary bar every console page shows: today's processed and failed, busy, enqueued, scheduled,
retry and archived tasks across the queues, and the servers up.

A page load reads it once (``summary_bar``, through the context processor); while pages that asked for it are
open (their live subscription says ``"summary": true``), the hub (``console/live/hub.py``) reads it once per round
of its dashboard loop, whatever the number of pages, and sends it when it changed (``kind: "summary"``). Either
way it is ``Inspector.fleet_summary``: the queue set, then one pipeline, however many queues.
Every console role reads every queue, so the bar adds up them all.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from taskq.queues.engine.errors import EngineError

#: The bar's figures, in its order: the FleetSummary field and what the page calls it.
SUMMARY_LABELS = (
    ("processed_today", "Processed today"),
    ("failed_today", "Failed today"),
    ("active", "Busy"),
    ("pending", "Enqueued"),
    ("scheduled", "Scheduled"),
    ("retry", "Retry"),
    ("archived", "Archived"),
    ("servers_up", "Servers up"),
)


def summary_figures(inspector: Any) -> dict[str, int]:
    """The bar's figures now, field -> value (what the hub sends and the page shows)."""
    return asdict(inspector.fleet_summary(inspector.queues()))


def summary_bar(inspector: Any) -> list[dict[str, Any]] | None:
    """The bar as the base template renders it: ``[{"name", "label", "value"}]``; None when Redis does not answer
    (the page still renders, without the bar: its own content says what is wrong)."""
    try:
        figures = summary_figures(inspector)
    except EngineError:
        return None
    return [{"name": name, "label": label, "value": figures[name]} for name, label in SUMMARY_LABELS]
