"""The queue page: banner of figures, a tab per state, the per-type breakdown, search and filters."""

from __future__ import annotations

import json
from math import ceil

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues.engine import TaskNotFoundError, serving
from taskq.queues.engine.actions import state_actions_for, task_actions_for
from taskq.queues.engine.inspector import WAITING_ON_LISTED
from taskq.queues.engine.quoting import shown
from taskq.queues.redaction_access import mask_error_groups, mask_task_text, masked, rules
from taskq.queues.rendering import preview

from ..access import viewer_page
from ..errors import bad_request
from ..forms import CONFIRMED_IDS, STATES, TaskListQuery, first_error
from ..page_render import render
from ..series_charts import queue_charts
from .common import FILTER_SCAN, inspector, on_asynq, page_cursor, preference, queue_url
from .series import ERROR_GROUPS_SHOWN, page_or_fragment, read_points, series_context


@viewer_page
def queue_detail(request: HttpRequest, queue: str) -> HttpResponse:
    """Access: viewers. Reads one page of one state by range (LRANGE/ZRANGE), or a bounded scan when filtering.
    Payloads are shown and searched as TASKS_REDACT masks them, whoever looks: a match inside a masked value
    would tell what it holds, and only the task page's audited reveal may do that."""
    query = TaskListQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    params = query.cleaned_data
    insp = inspector()
    info = insp.queue_info(queue)  # 404 for an unknown queue
    charts = queue_charts(read_points(insp, queue, params["range"]), params["range"])
    if params["fragment"]:
        return page_or_fragment(request, "", series_context(request, charts), "series")
    live_cursor = page_cursor(insp, [queue])  # before the task list: the live socket replays from here
    if params["task_id"]:
        try:
            task = insp.get_task(queue, params["task_id"])
        except TaskNotFoundError:
            messages.warning(request, f"No task with id {shown(params['task_id'])} in queue {shown(queue)}.")
        else:
            return redirect(reverse("taskq:task", args=[queue, task.id]))
    state, size = params["state"], params["size"] or preference(request).rows_per_page
    counts = info.counts()
    total = counts[state]
    search = None
    redaction = rules()
    if query.filtering:
        search = insp.search_tasks(
            queue,
            state,
            task_type=params["type"] or None,
            text=params["text"] or None,
            page=params["page"],
            limit=size,
            scan_limit=FILTER_SCAN,
            redaction=redaction,
        )
        tasks, page, pages = search.tasks, search.page, search.pages
    else:
        pages = max(1, ceil(total / size))
        page = min(params["page"], pages)  # past the end: the last page, not an error
        tasks = insp.list_tasks(queue, state, page=page, size=size)
    context = {
        **series_context(request, charts),
        "info": info,
        "unserved": serving.unserved([info], insp.servers(), insp.api_served_queues()),
        "queue": queue,
        "definition": insp.queue_definition(queue),
        # asynq has no waiting tasks: no tab for them (the page says why in one line).
        "tabs": [(s, counts[s], queue_url(queue, state=s)) for s in STATES if not (s == "waiting" and on_asynq())],
        "state": state,
        "rows": [(mask_task_text(task), preview(masked(task.type, task.payload))) for task in tasks],
        "total": total,
        "page": page,
        "pages": pages,
        "size": size,
        "page_links": _page_links(
            queue, page, pages, state=state, size=params["size"], type=params["type"], text=params["text"]
        ),
        "search": search,
        # The matches the filter's bulk bar confirms, by id, so the action can name each one that no longer matches.
        "confirmed_ids": json.dumps(search.match_ids) if search and len(search.match_ids) <= CONFIRMED_IDS else "",
        "filter_type": params["type"],
        "filter_text": params["text"],
        "types": sorted(insp.type_counts(queue).items()),
        "states": STATES,
        "row_actions": task_actions_for(state),
        "state_actions": state_actions_for(state),
        "here": request.get_full_path(),
        "live_cursor": live_cursor,
        "groups": insp.groups(queue) if state == "aggregating" else [],
        "waiting_on_listed": WAITING_ON_LISTED,
        "error_groups": mask_error_groups(insp.error_groups(queue, limit=ERROR_GROUPS_SHOWN)),
    }
    return render(request, "taskq/queue.html", context)


def _page_links(queue: str, page: int, pages: int, **params: object) -> dict[str, object]:
    """First, previous, next and last links plus a window of page numbers around the current one; ``params``
    (the tab, the page size, the filter) are kept in each."""

    def link(number: int) -> str:
        return queue_url(queue, page=number, **params)

    window = range(max(1, page - 2), min(pages, page + 2) + 1)
    return {
        "first": link(1) if page > 1 else "",
        "previous": link(page - 1) if page > 1 else "",
        "next": link(page + 1) if page < pages else "",
        "last": link(pages) if page < pages else "",
        "numbers": [(n, link(n)) for n in window],
    }
