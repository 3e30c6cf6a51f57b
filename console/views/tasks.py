"""The task page: every field of one task, its payload and result rendered, and its own event history."""

from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from ..errors import bad_request, error_page
from ..forms import TASK_ACTIONS, TaskDetailQuery, first_error
from ..rendering import render_bytes
from .common import inspector, page_cursor


@viewer_page
def task_detail(request: HttpRequest, queue: str, task_id: str) -> HttpResponse:
    """Access: viewers; ``?unredacted=1`` also needs ``queues.view_unredacted``, and each such look at a task
    that has masked values writes an audit entry. Reads the task hash and searches the newest part of the
    queue's event stream."""
    from queues.redaction import can_see_unredacted, is_redacted, record_unredacted_view, redact_task, rules

    query = TaskDetailQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    full, unredacted = query.cleaned_data["full"], query.cleaned_data["unredacted"]
    if unredacted and not can_see_unredacted(request.user):
        return error_page(
            request,
            403,
            "Permission denied",
            "Your account may not see redacted payloads and results in full: that takes the "
            "“Can see redacted task payloads and results in full” permission.",
        )
    insp = inspector()
    live_cursor = page_cursor(insp, [queue])  # before the task: the live socket replays from here
    task = insp.get_task(queue, task_id)  # 404 for an unknown queue or task
    redacted = is_redacted(task)
    unredacted = unredacted and redacted
    if unredacted:
        record_unredacted_view(request.user, queue, [task.id], "console task page")
    else:
        task = redact_task(task)
    events = insp.task_events(queue, task_id)
    context = {
        "task": task,
        "queue": queue,
        "payload": render_bytes(task.payload, full=full == "payload"),
        "result": render_bytes(task.result, full=full == "result") if task.result is not None else None,
        "redacted": redacted,
        "unredacted": unredacted,
        "redacted_type": rules().covers_type(task.type),
        "can_unredact": can_see_unredacted(request.user),
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
