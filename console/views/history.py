"""The History page: the daily rollups of the analytics job (``manage.py task_analytics``), charted per day,
filtered by queue and task type."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from queues.history.queries import history_report

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


@viewer_page
def history(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the ``TaskDailyRollup`` table only (no Redis), through ``queues.history.queries``."""
    query = HistoryQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    report = history_report(query.cleaned_data["queue"], query.cleaned_data["type"], query.cleaned_data["days"])
    bars = [Bar(day.isoformat(), values) for day, values in report.per_day.items()]
    chart = grouped_columns(bars, ("processed", "failed"), title="Succeeded and failed attempts per day")
    p95 = [Bar(f"{day.isoformat()} {ttype}", {"pending": wait, "active": run}) for day, ttype, wait, run in report.p95]
    latency_chart = grouped_columns(p95, ("pending", "active"), title="p95 wait (pending) and run (active) in ms")
    context = {
        "query": query.cleaned_data,
        "queues": report.queues,
        "types": report.types,
        "days_choices": HISTORY_DAYS,
        "chart": chart if bars else None,
        "latency_chart": latency_chart if p95 else None,
        "rows": report.rows,
        "latest": report.latest,
    }
    return render(request, "console/history.html", context)
