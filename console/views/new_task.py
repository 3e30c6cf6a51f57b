"""The new task form: a task created from the console, opened from the dashboard, a queue page or a
task type page (prefilled from that context), or as "Run again as a new task" from the page of any task that still
holds its payload (prefilled from that task).

The form's payload is read as the edit form reads it (``forms.PayloadForm``), the task is enqueued through the
engine's shared client (``taskq.queues.conf.get_client``, as any producer enqueues), and each creation writes a
``create_task`` audit entry whose payload is masked as everywhere else (``record_with_payload``). A refusal, the
form's or the engine's, shows the form again with the error on the field it concerns and writes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues import conf, key_format
from taskq.queues.engine import AlreadyExistsError, ValidationError
from taskq.queues.redaction_access import is_redacted, record_unredacted_view, record_with_payload

from ..access import creator_form
from ..errors import bad_request
from ..forms import NewTaskForm, NewTaskQuery, first_error, payload_as_text
from ..page_render import render
from .common import inspector
from .tasks import masked_form_refusal

#: The audit action of a task created from the console, either way ("New task", "Run again as a new task").
CREATE_ACTION = "create_task"


@creator_form
def new_task(request: HttpRequest) -> HttpResponse:
    """Access: ``taskq.create_task``. GET shows the form, its queue and type from the query string (the page it
    was opened from); POST creates the task (``_create``)."""
    _refused_on_asynq()
    if request.method == "POST":
        return _create(request, NewTaskForm(request.POST), None)
    query = NewTaskQuery(request.GET)
    if not query.is_valid():
        return bad_request(request, first_error(query))
    context = query.cleaned_data
    initial = {"queue": context["queue"] or "default", "type": context["type"], "payload": "{}", "encoding": "json"}
    return _form_page(request, NewTaskForm(initial=initial), None)


@creator_form
def run_again(request: HttpRequest, queue: str, task_id: str) -> HttpResponse:
    """Access: ``taskq.create_task`` (and, for a task with masked values, ``taskq.view_unredacted``: the form
    shows its payload in full, so opening it is audited like "Show unredacted"). GET shows the form filled with the
    task's type, queue, payload and options; POST creates a new task from it (``_create``), whatever became of the
    task since. The task itself is left as it is."""
    _refused_on_asynq()
    source = {"queue": queue, "id": task_id}
    if request.method == "POST":
        return _create(request, NewTaskForm(request.POST), source)
    task = inspector().get_task(queue, task_id)  # 404: an unknown queue, or a task gone with its payload
    refused = masked_form_refusal(request, task)
    if refused:
        return refused
    if is_redacted(task):
        record_unredacted_view(request.user, queue, [task.id], "console run-again form")
    return _form_page(request, NewTaskForm(initial=_copied(task)), source)


def _refused_on_asynq() -> None:
    """The form enqueues through taskq's Client: over asynq's keys it is refused before it is shown (the explained
    page of ``errors.format_unsupported``), rather than after it was filled in."""
    key_format.refuse_taskq_writes(conf.taskq_settings(), "A task created from the console", "console.new_task")


def _copied(task: Any) -> dict[str, Any]:
    """The form's fields as ``task`` had them. Not its process time (a copy runs now unless told otherwise) nor a
    deadline already past (the copy would never run); a unique task's lock TTL is not kept with the task."""
    future_deadline = task.deadline if task.deadline and task.deadline > datetime.now(UTC) else None
    return {
        **payload_as_text(task.payload),
        "type": task.type,
        "queue": task.queue,
        "max_retry": task.max_retry,
        "timeout": task.timeout,
        "deadline": future_deadline,
        "retention": task.retention or None,
        "headers": "\n".join(f"{name}: {value}" for name, value in task.headers.items()),
    }


def _create(request: HttpRequest, form: NewTaskForm, source: dict[str, str] | None) -> HttpResponse:
    """Validate, enqueue and audit, then land on the new task's page. A refusal is the form again: 400 for bad
    input (the form's or the engine's ``ValidationError``), 409 for a unique task's duplicate; nothing written."""
    if not form.is_valid():
        return _form_page(request, form, source, status=400)
    data, options = form.cleaned_data, form.enqueue_options()
    try:
        info = conf.get_client().enqueue(data["type"], data["payload_bytes"], **options)
    except ValidationError as exc:
        form.engine_refusal(exc.message)
        return _form_page(request, form, source, status=400)
    except AlreadyExistsError as exc:  # a unique task of the same type and payload holds its lock
        form.add_error(None, f"not created: {exc.message}")
        return _form_page(request, form, source, status=409)
    _audit_creation(request, info, data["payload_bytes"], options, source)
    messages.success(request, f"Task {info.id} created in queue {info.queue}: {info.state}.")
    return redirect(reverse("taskq:task", args=[info.queue, info.id]))


def _audit_creation(
    request: HttpRequest, info: Any, payload: bytes, options: dict[str, Any], source: dict[str, str] | None
) -> None:
    """The ``create_task`` entry: the payload masked by ``TASKS_REDACT`` for the new task's type, the options
    given, and the task it was copied from; with ``TASKS_AUDIT_UNREDACTED``, the payload in full beside it."""
    given = {name: value.isoformat() if isinstance(value, datetime) else value for name, value in options.items()}

    def detail(shown: bytes) -> str:
        text = payload_as_text(shown)
        return json.dumps({
            "payload": text["payload"], "encoding": text["encoding"], "type": info.type, "options": given,
            "run_again_from": source,
        })  # fmt: skip

    record_with_payload(request.user, CREATE_ACTION, info.queue, [info.id], info.type, payload, detail)


def _form_page(
    request: HttpRequest, form: NewTaskForm, source: dict[str, str] | None, status: int = 200
) -> HttpResponse:
    """The form, with the suggestions of its type and queue fields: the queues, and the types each has seen
    (counted by the engine's scripts, kept once their count is back to 0). The page swaps the type suggestions
    when the queue field changes."""
    insp = inspector()
    names = insp.queues()
    seen = {queue: sorted(types) for queue, types in insp.type_counts_of(names, keep_zero=True).items()}
    queue = form["queue"].value() or ""
    context = {
        "form": form,
        "source": source,
        "queue_names": names,
        "task_types": seen.get(queue, []),
        "types_by_queue": seen,
    }
    return render(request, "taskq/task_new.html", context, status=status)
