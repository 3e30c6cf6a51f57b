"""The History page: the daily rollups of the analytics job (``manage.py task_analytics``), charted per day,
filtered by queue and task type."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from django import forms
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from ..charts import Bar, grouped_columns
from ..errors import bad_request
from ..forms import first_error

HISTORY_DAYS = (7, 30, 90)


class HistoryQuery(forms.Form):
    queue = forms.CharField(max_length=128, required=False)
    type = forms.CharField(max_length=256, required=False)
    days = forms.TypedChoiceField(choices=[(d, d) for d in HISTORY_DAYS], coerce=int, required=False)

    def clean_days(self) -> int:
        return self.cleaned_data.get("days") or 30


def _percentile_rows(rows: Any) -> list[dict[str, Any]]:
    return [
        {
            "day": r.day,
            "queue": r.queue,
            "type": r.task_type,
            "enqueued": r.enqueued,
            "started": r.started,
            "succeeded": r.succeeded,
            "failed": r.failed,
            "retried": r.retried,
            "archived": r.archived,
            "failure_rate": None if r.failure_rate is None else 100 * r.failure_rate,
            "wait": (r.wait_p50_ms, r.wait_p95_ms, r.wait_p99_ms),
            "run": (r.run_p50_ms, r.run_p95_ms, r.run_p99_ms),
        }
        for r in rows
    ]


@viewer_page
def history(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the ``TaskDailyRollup`` table only (no Redis)."""
    from queues.history.models import TaskDailyRollup

    query = HistoryQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    queue, task_type, days = (query.cleaned_data[k] for k in ("queue", "type", "days"))
    rows = TaskDailyRollup.objects.all()
    latest = rows.aggregate(latest=Max("day"))["latest"]
    queues = sorted(set(rows.values_list("queue", flat=True)))
    types = sorted(set((rows.filter(queue=queue) if queue else rows).values_list("task_type", flat=True)))
    if queue:
        rows = rows.filter(queue=queue)
    if task_type:
        rows = rows.filter(task_type=task_type)
    if latest is not None:
        rows = rows.filter(day__gt=latest - timedelta(days=days))
    per_day: dict[Any, dict[str, int]] = defaultdict(dict)
    for day in rows.values("day").annotate(processed=Sum("succeeded"), failed=Sum("failed")).order_by("day"):
        per_day[day["day"]] = {"processed": day["processed"] or 0, "failed": day["failed"] or 0}
    bars = [Bar(day.isoformat(), values) for day, values in sorted(per_day.items())]
    chart = grouped_columns(bars, ("processed", "failed"), title="Succeeded and failed attempts per day")
    p95 = [
        Bar(
            r.day.isoformat() + " " + r.task_type,
            {"pending": int(r.wait_p95_ms or 0), "active": int(r.run_p95_ms or 0)},
        )
        for r in rows.order_by("day", "queue", "task_type")[:60]
    ]
    latency_chart = grouped_columns(p95, ("pending", "active"), title="p95 wait (pending) and run (active) in ms")
    context = {
        "query": query.cleaned_data,
        "queues": queues,
        "types": types,
        "days_choices": HISTORY_DAYS,
        "chart": chart if bars else None,
        "latency_chart": latency_chart if p95 else None,
        "rows": _percentile_rows(rows.order_by("-day", "queue", "task_type")[:500]),
        "latest": latest,
    }
    return render(request, "console/history.html", context)
