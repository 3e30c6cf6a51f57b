"""The time charts' section of a page (dashboard, queue, task type) and the task type page itself.

Deliberately shares its name with ``queues/engine/series.py``: this draws the time charts' section, that keeps the
series it reads (console views are named after what they show).
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse

from taskq.queues.engine.series import RANGES, Point
from taskq.queues.redaction_access import mask_error_groups, mask_string

from ..access import viewer_page
from ..errors import bad_request
from ..forms import STATES, SeriesQuery, first_error
from ..page_render import render
from ..series_charts import ChartSet, type_charts, type_summary
from .common import inspector, on_asynq

#: Retry and archived tasks of a type read, at most, to find its most frequent last errors.
ERROR_SAMPLE = 1000
TOP_ERRORS = 10
#: Error groups a queue or task type page lists, the most recently seen first.
ERROR_GROUPS_SHOWN = 50


def read_points(insp: Any, queue: str | None, range_name: str, **options: Any) -> list[Point]:
    """The series points a page charts (``Inspector.series``); none over asynq's keys, which hold no time series:
    the page says so in one line instead of charts (``taskq/_series_charts.html``)."""
    if on_asynq():
        return []
    return list(insp.series(queue, range_name, **options))


def series_context(request: HttpRequest, charts: ChartSet) -> dict[str, Any]:
    """What ``taskq/_series_charts.html`` needs: the charts, a link per range keeping the page's other
    parameters, and the URL the live page fetches the charts from."""
    params = {k: v for k, v in request.GET.items() if k not in ("range", "fragment")}
    links = [(name, "?" + urlencode({**params, "range": name})) for name in RANGES]
    return {
        "series": charts,
        "range_links": links,
        "series_url": "?" + urlencode({**params, "range": charts.range, "fragment": "series"}),
    }


def page_or_fragment(request: HttpRequest, template: str, context: dict[str, Any], fragment: str) -> HttpResponse:
    """The page, or with ``fragment=series`` its time charts alone."""
    if fragment:
        return render(request, "taskq/_series_charts.html", context)
    return render(request, template, context)


@viewer_page
def task_type(request: HttpRequest, queue: str, task_type: str) -> HttpResponse:
    """Access: viewers. One task type of one queue: its time charts, the range's figures, its counts per state,
    its most frequent last errors among its retry and archived tasks (a bounded scan of each), and its error
    groups. Error text reads as TASKS_REDACT_PATTERNS masks it."""
    query = SeriesQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    insp = inspector()
    insp.queue_info(queue)  # 404 for an unknown queue
    range_name = query.cleaned_data["range"]
    points = read_points(insp, queue, range_name)
    errors: Counter[str] = Counter()
    scanned = 0
    for state in ("retry", "archived"):
        found = insp.search_tasks(queue, state, task_type=task_type, limit=ERROR_SAMPLE, scan_limit=ERROR_SAMPLE)
        scanned += found.scanned
        errors.update(
            mask_string(t.last_error or "") or "(no error recorded)" for t in found.tasks if t.type == task_type
        )
    context = {
        "queue": queue,
        "task_type": task_type,
        "summary": type_summary(points, task_type),
        "counts": insp.type_counts(queue).get(task_type, {}),
        "states": STATES,
        "top_errors": errors.most_common(TOP_ERRORS),
        "errors_scanned": scanned,
        "error_groups": mask_error_groups(insp.error_groups(queue, task_type, limit=ERROR_GROUPS_SHOWN)),
        **series_context(request, type_charts(points, range_name, task_type)),
    }
    return page_or_fragment(request, "taskq/task_type.html", context, query.cleaned_data["fragment"])
