"""The History page: the daily rollups of the analytics job (``manage.py task_analytics``), charted per day,
filtered by queue and task type; operators may enqueue the job for today so far."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues import conf
from taskq.queues.audit import record_action
from taskq.queues.history.queries import history_report

from ..access import operator_action, viewer_page
from ..charts import Line, stable_colours, time_chart
from ..errors import bad_request
from ..forms import first_error
from ..page_render import render
from .common import absent_on_asynq

HISTORY_DAYS = (7, 30, 90)
LATENCY_TYPES = 8  # task types drawn on the p95 charts, at most


class HistoryQuery(forms.Form):
    queue = forms.CharField(max_length=128, required=False)
    type = forms.CharField(max_length=256, required=False)
    days = forms.TypedChoiceField(choices=[(d, d) for d in HISTORY_DAYS], coerce=int, required=False)

    def clean_days(self) -> int:
        return self.cleaned_data.get("days") or 30


@viewer_page
def history(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the ``TaskDailyRollup`` table only (no Redis), through
    ``taskq.queues.history.queries``."""
    absent_on_asynq("history")
    query = HistoryQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    report = history_report(query.cleaned_data["queue"], query.cleaned_data["type"], query.cleaned_data["days"])
    days = list(report.per_day)
    labels = [day.strftime("%m-%d") for day in days]
    attempts = [
        Line("succeeded", [report.per_day[day]["processed"] for day in days], "ok"),
        Line("failed", [report.per_day[day]["failed"] for day in days], "fail"),
    ]
    # p95 per day of the busiest types (by rows in the window), one line each: days on the axis, types in the legend.
    by_type: dict[str, dict[date, tuple[int, int]]] = defaultdict(dict)
    for day, task_type, wait, run in report.p95:
        by_type[task_type][day] = (wait, run)
    shown = sorted(by_type, key=lambda t: (-len(by_type[t]), t))[:LATENCY_TYPES]

    colours = stable_colours(shown)

    def latency(which: int) -> list[Line]:
        return [Line(t, [by_type[t][d][which] if d in by_type[t] else None for d in days], colours[t]) for t in shown]

    context = {
        "query": query.cleaned_data,
        "queues": report.queues,
        "types": report.types,
        "days_choices": HISTORY_DAYS,
        "charts": _charts(labels, attempts, latency(1), latency(0)) if days else [],
        "rows": report.rows,
        "latest": report.latest,
    }
    return render(request, "taskq/history.html", context)


def _charts(labels: list[str], attempts: list[Line], run: list[Line], wait: list[Line]) -> list[tuple[str, Any]]:
    return [
        ("Attempts per day", time_chart(labels, attempts, title="Succeeded and failed attempts per day", stacked=True)),
        ("Run time p95 by type", time_chart(labels, run, title="Run time p95 per day", stacked=False, unit="ms")),
        ("Wait p95 by type", time_chart(labels, wait, title="Wait before start p95 per day", stacked=False, unit="ms")),
    ]


@operator_action
def run_analytics(request: HttpRequest) -> HttpResponse:
    """Enqueue ``analytics:daily`` for today so far (a worker runs it on Spark), audited as ``run_analytics``."""
    absent_on_asynq("history")
    info = conf.get_client().enqueue("analytics:daily", {"date": "today"})
    record_action(request.user, "run_analytics", queue=info.queue, task_ids=[info.id], detail="today so far")
    messages.success(
        request,
        "Today's rollups were enqueued (analytics:daily): the History page shows them once a worker has run it.",
    )
    return redirect(reverse("taskq:history"))
