"""The task page: every field of one task, its payload and result rendered, and its own event history; and the
edit-and-retry form of a retry or archived task."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.console.django_task_display import django_task
from taskq.queues.engine.actions import TASK_ACTIONS
from taskq.queues.models import AuditLog
from taskq.queues.redaction_access import (
    can_see_unredacted,
    is_redacted,
    record_unredacted_view,
    record_with_payload,
    redact_task,
    rules,
)
from taskq.queues.rendering import render_bytes

from ..access import editor_form, viewer_page
from ..errors import bad_request, error_page
from ..forms import EditTaskForm, TaskDetailQuery, first_error, payload_as_text
from ..page_render import render
from ..permissions import can_edit
from ..task_page import EDITABLE, GoneTask, read_task, sections_context
from .common import acting_inspector, inspector, page_cursor


@viewer_page
def task_detail(request: HttpRequest, queue: str, task_id: str) -> HttpResponse:
    """Access: viewers; ``?unredacted=1`` also needs ``taskq.view_unredacted``, and each such look at a task
    that has masked values writes an audit entry. Reads the task hash and searches the newest part of the
    queue's event stream; a task that is gone but has events there is shown from them, marked gone."""
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
    # 404 for an unknown queue, or a task with neither a hash nor events; a gone task with events is a record
    task, events = read_task(insp, queue, task_id)
    gone = isinstance(task, GoneTask)
    redacted = not gone and is_redacted(task)
    unredacted = unredacted and redacted
    if unredacted:
        record_unredacted_view(request.user, queue, [task.id], "console task page")
    elif not gone:
        task = redact_task(task)
    context = {
        **sections_context(insp, queue, task, events),
        "operator_actions": _operator_actions(queue, task_id),
        # As this viewer may see them, like the payload: the live sections' ``task`` is masked for every viewer.
        "headers": {} if gone else task.headers,
        "payload": None if gone else render_bytes(task.payload, full=full == "payload"),
        "django_task": None if gone else django_task(task),
        "result": render_bytes(task.result, full=full == "result") if not gone and task.result is not None else None,
        "redacted": redacted,
        "unredacted": unredacted,
        "redacted_type": rules().covers_type(task.type),
        "redacted_patterns": bool(rules().patterns),
        "can_unredact": can_see_unredacted(request.user),
        # Every action's button is rendered, those the state does not take hidden: the live page shows the ones
        # the task's new state takes, as a fresh load would.
        "actions": [] if gone else [(name, a.applies_to(task.state)) for name, a in TASK_ACTIONS.items()],
        "here": request.path,
        "full": full,
        "live_cursor": live_cursor,
        "can_edit": can_edit(request.user),
        "editable": task.state in EDITABLE and not gone,
        "no_handler": "no handler for task type" in (task.last_error or ""),
    }
    return render(request, "taskq/task.html", context)


def masked_form_refusal(request: HttpRequest, task: Any) -> HttpResponse | None:
    """A form that shows the task's payload in full (edit, run again as a new task) takes
    ``taskq.view_unredacted`` when the task has masked values: the 403 page then, else None."""
    if is_redacted(task) and not can_see_unredacted(request.user):
        return error_page(
            request, 403, "Permission denied", "This task has masked values: this form shows them in full, which "
            "takes the “Can see redacted task payloads and results in full” permission.",
        )  # fmt: skip
    return None


@editor_form
def edit_task(request: HttpRequest, queue: str, task_id: str) -> HttpResponse:
    """Access: ``taskq.edit_task`` (and, for a task with masked values, ``taskq.view_unredacted``: the form shows
    the payload in full, so opening it is audited like "Show unredacted"). GET shows the form filled with the
    task's payload and options; POST validates it, edits and runs the task (``Inspector.edit_task``) and writes an
    audit entry that keeps the original payload as the log's readers may see it (``_audit_edit``)."""
    task = inspector().get_task(queue, task_id)  # 404 for an unknown queue or task
    refused = masked_form_refusal(request, task)
    if refused:
        return refused
    if task.state not in EDITABLE:
        return error_page(
            request, 409, "Cannot edit", f"The task is {task.state}: only retry and archived tasks can be edited."
        )
    if request.method != "POST":
        if is_redacted(task):
            record_unredacted_view(request.user, queue, [task.id], "console edit form")
        initial = {
            **payload_as_text(task.payload), "type": task.type, "max_retry": task.max_retry, "timeout": task.timeout
        }  # fmt: skip
        form = EditTaskForm(initial=initial)
        return render(request, "taskq/task_edit.html", {"task": task, "queue": queue, "form": form})
    form = EditTaskForm(request.POST)
    if not form.is_valid():
        return render(request, "taskq/task_edit.html", {"task": task, "queue": queue, "form": form}, status=400)
    data = form.cleaned_data
    edited = acting_inspector(request).edit_task(
        queue, task_id, data["payload_bytes"], to_queue=data["queue"] or None, max_retry=data["max_retry"],
        timeout=data["timeout"], task_type=data["type"] or None,
    )  # fmt: skip
    _audit_edit(request, task, edited)
    messages.success(request, f"Task {task_id} edited and moved to pending in queue {edited.queue}.")
    return redirect(reverse("taskq:task", args=[edited.queue, task_id]))


def _audit_edit(request: HttpRequest, task: Any, edited: Any) -> None:
    """The ``edit_task`` entry: the original payload masked by ``TASKS_REDACT`` (whoever reads the log sees what
    a viewer of the task would), the original and new options; with ``TASKS_AUDIT_UNREDACTED``, the original in
    full beside it (``record_with_payload``)."""

    def detail(payload: bytes) -> str:
        original = payload_as_text(payload)
        return json.dumps({
            "original_payload": original["payload"], "original_encoding": original["encoding"],
            "original_options": {"type": task.type, "queue": task.queue, "max_retry": task.max_retry,
                                 "timeout": task.timeout},
            "new_options": {"type": edited.type, "queue": edited.queue, "max_retry": edited.max_retry,
                            "timeout": edited.timeout},
        })  # fmt: skip

    record_with_payload(request.user, "edit_task", task.queue, [task.id], task.type, task.payload, detail)


#: Audit entries of a queue read, at most, to find the operator actions on one task.
AUDIT_SCAN = 500


def _operator_actions(queue: str, task_id: str) -> list[Any]:
    """Audit entries that name the task, newest first, among the queue's newest AUDIT_SCAN."""
    entries = AuditLog.objects.filter(queue=queue).order_by("-created_at", "-id")[:AUDIT_SCAN]
    return [entry for entry in entries if task_id in (entry.task_ids or [])]
