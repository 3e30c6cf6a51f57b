"""The task page: every field of one task, its payload and result rendered, and its own event history."""

from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from ..errors import bad_request
from ..forms import TASK_ACTIONS, TaskDetailQuery, first_error
from ..live.pages import page_cursor
from ..rendering import render_bytes
from .common import inspector


@viewer_page
def task_detail(request: HttpRequest, queue: str, task_id: str) -> HttpResponse:
    """Access: viewers. Reads the task hash and searches the newest part of the queue's event stream."""
    query = TaskDetailQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    full = query.cleaned_data["full"]
    insp = inspector()
    live_cursor = page_cursor(insp, [queue])  # before the task: the live socket replays from here
    task = insp.get_task(queue, task_id)  # 404 for an unknown queue or task
    events = insp.task_events(queue, task_id)
    context = {
        "task": task,
        "queue": queue,
        "payload": render_bytes(task.payload, full=full == "payload"),
        "result": render_bytes(task.result, full=full == "result") if task.result is not None else None,
        "events": events,
        "actions": [a for a, (_m, allowed) in TASK_ACTIONS.items() if task.state in allowed],
        "retention_left": _seconds_until(task.expires_at),
        "lease_left": _seconds_until(task.lease_expires_at),
        "here": request.path,
        "full": full,
        "live_cursor": live_cursor,
    }
    return render(request, "console/task.html", context)


def _seconds_until(when: datetime | None) -> float | None:
    return None if when is None else (when - datetime.now(tz=UTC)).total_seconds()
