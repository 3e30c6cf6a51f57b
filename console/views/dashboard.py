"""The dashboard: every queue's size by state, processed and failed over a period, and the queues table.

The size chart and the table's cells are built by ``console/renderers.py`` for both the page and the live hub
(``console/live/dashboard.py``), so a live update shows exactly what a reload would.

Deliberately shares its name with ``console/live/dashboard.py`` and ``console/rq/dashboard.py``: the three are
the dashboard page's parts (its view here, its live snapshot, its RQ section), each in its package.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues.engine import QueueInfo, serving

from ..access import viewer_page
from ..charts import SIZE_SERIES, Bar, grouped_columns
from ..errors import bad_request
from ..forms import HISTORY_DAYS, DashboardQuery, first_error
from ..page_render import render
from ..renderers import QueueRow, size_chart
from ..rq import bridge_enabled
from ..series_charts import dashboard_charts, dashboard_fields
from .common import inspector
from .series import page_or_fragment, read_points, series_context

#: The name the new-row templates of the page are rendered with; live.js swaps in a new queue's name.
ROW_PLACEHOLDER = "taskq-new-queue"


@viewer_page
def queue_list(request: HttpRequest) -> HttpResponse:
    """Access: viewers. ``/queues/``, the parent of every queue's URL, is where someone trimming a queue page's
    URL lands: the queues are listed in the dashboard's queues table, which the navigation's "Queues" opens too."""
    return redirect(reverse("taskq:dashboard") + "#queues-table")


@viewer_page
def dashboard(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads: every queue's figures in three pipelined round trips, and their daily history in
    one more."""
    query = DashboardQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    days = query.cleaned_data["days"]
    insp = inspector()
    infos: list[Any] = []
    totals: dict[str, tuple[int, int]] = {}
    every = insp.queue_infos(insp.queues())  # three round trips, however many queues
    range_name = query.cleaned_data["range"]
    busiest = [i.queue for i in sorted(every, key=lambda i: (-i.processed_today, i.queue))]
    points = read_points(insp, None, range_name, fields=dashboard_fields(busiest))
    charts = dashboard_charts(points, range_name, busiest)
    if query.cleaned_data["fragment"]:
        return page_or_fragment(request, "", series_context(request, charts), "series")
    histories = insp.histories([info.queue for info in every], days)  # one round trip, however many queues
    for info in every:
        if info.queue not in histories:
            continue  # removed between listing and reading: just not shown this time
        infos.append(info)
        for day in histories[info.queue]:
            processed, failed = totals.get(day.date, (0, 0))
            totals[day.date] = (processed + day.processed, failed + day.failed)
    history_bars = [Bar(date[5:], {"processed": p, "failed": f}) for date, (p, f) in sorted(totals.items())]
    history_chart = grouped_columns(
        history_bars, ("processed", "failed"), title=f"Processed and failed, last {days} day{'s' if days > 1 else ''}"
    )
    context = {
        **series_context(request, charts),
        "unserved": serving.unserved(infos, insp.servers(), insp.api_served_queues()),
        "queues": [QueueRow(i) for i in infos],
        # Rows for queues that appear while the page is open (live.js fills them in), running and paused.
        "new_rows": [QueueRow(QueueInfo(ROW_PLACEHOLDER)), QueueRow(QueueInfo(ROW_PLACEHOLDER, paused=True))],
        "size_chart": size_chart(infos),
        "size_series": SIZE_SERIES,
        "history_chart": history_chart,
        "days": days,
        "day_choices": HISTORY_DAYS,
        "period_processed": sum(p for p, _ in totals.values()),
        "period_failed": sum(f for _, f in totals.values()),
        **_rq_section(),
    }
    return render(request, "taskq/dashboard.html", context)


def _rq_section() -> dict[str, object]:
    """The dashboard's RQ section, where the project runs the RQ bridge; nothing of RQ is imported otherwise."""
    if not bridge_enabled():
        return {}
    from taskq.console.rq.dashboard import rq_dashboard_context  # optional: rq (the RQ bridge's extra)

    return {"rq_bridge": True, **rq_dashboard_context()}
