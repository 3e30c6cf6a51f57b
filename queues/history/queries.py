"""What the console's History page reads of the pipeline's output: the ``TaskDailyRollup`` rows of a window of
days, filtered by queue and task type, with the per-day totals and p95 latencies it charts. Kept beside the job
that writes the table, so the pipeline's output and its one reader change together."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.db.models import Max, QuerySet, Sum

from taskq.queues.engine.records import picked

from .models import TaskDailyRollup

#: Rows of the table the page shows, and (day, type) pairs of the p95 chart, at most.
MAX_ROWS = 500
MAX_LATENCY_POINTS = 60


@dataclass
class HistoryReport:
    latest: date | None  # the newest day the job has rolled up; the window ends there
    queues: list[str]  # every queue with rollups (for the filter)
    types: list[str]  # every task type with rollups, of the chosen queue when there is one
    per_day: dict[date, dict[str, int]] = field(default_factory=dict)  # day -> processed / failed
    p95: list[tuple[date, str, int, int]] = field(default_factory=list)  # day, type, wait p95 ms, run p95 ms
    rows: list[dict[str, Any]] = field(default_factory=list)  # newest first


def history_report(queue: str = "", task_type: str = "", days: int = 30) -> HistoryReport:
    """The rollups of the ``days`` days up to the newest one rolled up, of ``queue`` and ``task_type`` when given."""
    # Rows with no type came from a queue's pause and resume events, rolled up before the job left them out.
    rows: QuerySet[TaskDailyRollup] = TaskDailyRollup.objects.exclude(task_type="")
    latest = rows.aggregate(latest=Max("day"))["latest"]
    queues = sorted(set(rows.values_list("queue", flat=True)))
    types = sorted(set((rows.filter(queue=queue) if queue else rows).values_list("task_type", flat=True)))
    if queue:
        rows = rows.filter(queue=queue)
    if task_type:
        rows = rows.filter(task_type=task_type)
    if latest is not None:
        rows = rows.filter(day__gt=latest - timedelta(days=days))
    per_day: dict[date, dict[str, int]] = defaultdict(dict)
    for day in rows.values("day").annotate(processed=Sum("succeeded"), failed=Sum("failed")).order_by("day"):
        per_day[day["day"]] = {"processed": day["processed"] or 0, "failed": day["failed"] or 0}
    p95 = [
        (r.day, r.task_type, int(r.wait_p95_ms or 0), int(r.run_p95_ms or 0))
        for r in rows.order_by("day", "queue", "task_type")[:MAX_LATENCY_POINTS]
    ]
    table = [_row(r) for r in rows.order_by("-day", "queue", "task_type")[:MAX_ROWS]]
    return HistoryReport(latest, queues, types, dict(sorted(per_day.items())), p95, table)


def _row(r: TaskDailyRollup) -> dict[str, Any]:
    return {
        **picked(r, "day queue"),
        "type": r.task_type,
        **picked(r, "enqueued started succeeded failed retried archived"),
        "failure_rate": None if r.failure_rate is None else 100 * r.failure_rate,
        "wait": (r.wait_p50_ms, r.wait_p95_ms, r.wait_p99_ms),
        "run": (r.run_p50_ms, r.run_p95_ms, r.run_p99_ms),
    }
