"""The dashboard: every queue's size by state, processed and failed over a period, and the queues table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from ..access import viewer_page
from ..charts import SIZE_SERIES, Bar, grouped_columns, stacked_bars
from ..errors import bad_request
from ..forms import HISTORY_DAYS, DashboardQuery, first_error
from .common import inspector


@dataclass
class QueueRow:
    info: Any  # QueueInfo

    @property
    def error_rate(self) -> float | None:
        """Failed over processed today, in percent (processed counts failures too, as in asynq)."""
        processed = self.info.processed_today
        return None if not processed else 100.0 * self.info.failed_today / processed


@viewer_page
def dashboard(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads: every queue's figures in three pipelined round trips, one MGET per queue for
    its history."""
    from console.rq.dashboard import rq_dashboard_context
    from queues.engine import QueueNotFoundError

    query = DashboardQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    days = query.cleaned_data["days"]
    insp = inspector()
    infos, totals = [], {}
    names = insp.queues()
    for info in insp.queue_infos(names):  # three round trips, however many queues
        try:
            history = insp.history(info.queue, days)
        except QueueNotFoundError:
            continue  # removed between listing and reading: just not shown this time
        infos.append(info)
        for day in history:
            processed, failed = totals.get(day.date, (0, 0))
            totals[day.date] = (processed + day.processed, failed + day.failed)
    size_chart = stacked_bars(
        [Bar(i.queue, {s: getattr(i, s) for s in SIZE_SERIES}, reverse("queue", args=[i.queue])) for i in infos],
        SIZE_SERIES, title="Queue size by state")
    history_bars = [Bar(date[5:], {"processed": p, "failed": f}) for date, (p, f) in sorted(totals.items())]
    history_chart = grouped_columns(history_bars, ("processed", "failed"),
                                    title=f"Processed and failed, last {days} day{'s' if days > 1 else ''}")
    context = {
        "queues": [QueueRow(i) for i in infos],
        "size_chart": size_chart,
        "size_series": SIZE_SERIES,
        "history_chart": history_chart,
        "days": days,
        "day_choices": HISTORY_DAYS,
        "period_processed": sum(p for p, _ in totals.values()),
        "period_failed": sum(f for _, f in totals.values()),
        **rq_dashboard_context(),
    }
    return render(request, "console/dashboard.html", context)
