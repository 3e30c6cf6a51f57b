"""``tasks export status``: the event exporter's lease holder, and per queue how far it has exported the event
stream (committed offset against the stream's ends) and the last gap it detected (events trimmed before it
stored them). The same figures as ``Inspector.export_status`` and the console's History page."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from . import output as out
from .context import Context
from .parser import command, group


def register(sub: argparse._SubParsersAction[Any]) -> None:
    export = group(sub, "export", "Inspect the event exporter (task history to Parquet).")
    command(export, "status", status, "Show the exporter's lease holder, each queue's exported offset and gaps.")


def status(args: argparse.Namespace, ctx: Context) -> out.Output:
    report = ctx.inspector.export_status()
    rows = [
        [
            q.queue,
            q.committed or "-",
            q.last_id or "-",
            q.length,
            q.cap,
            "yes" if q.behind else "no",
            q.last_gap.first_id if q.last_gap else "-",
        ]
        for q in report.queues
    ]
    holder = report.holder or "none (no worker runs the exporter, or its lease lapsed)"
    text = f"Exporter: {holder}\nGaps detected: {report.gaps}"
    if rows:
        text += "\n\n" + out.table(
            ["QUEUE", "COMMITTED", "LAST EVENT", "LENGTH", "CAP", "BEHIND", "LAST GAP AT"], rows, numeric=[3, 4]
        )
    doc = {
        "holder": report.holder,
        "gaps": report.gaps,
        "queues": [{**asdict(q), "behind": q.behind} for q in report.queues],
    }
    return out.Output(doc, text)
