"""``TASKS_REDACT`` and ``TASKS_REDACT_PATTERNS`` as every place that shows a payload or result to a person applies
them (console pages, the admin's task view, the live feed, the CLI), who may see through them, and the audit entry
each look writes.

The rules themselves (types by prefix, JSON keys at any depth, value patterns) live in
``taskq.queues.engine.redaction``,
the settings in ``taskq.queues.conf.taskq_settings()`` (``TASKS_REDACT``, or
``TASKS_REDACT_TYPES``/``TASKS_REDACT_KEYS``,
and ``TASKS_REDACT_PATTERNS``); ``redaction_rules`` builds them from it (``rules``, also exported here), and this
module is the one place that knows the permission and the audit action. Bad settings are reported by the system
check ``taskq.E110`` (``redaction_checks``).
"""

from __future__ import annotations

__all__ = [
    "UNREDACTED_PERMISSION",
    "VIEW_ACTION",
    "can_see_unredacted",
    "is_redacted",
    "mask_detail",
    "mask_error_groups",
    "mask_event_entry",
    "mask_events",
    "mask_string",
    "mask_task_text",
    "mask_workflow",
    "masked",
    "record_unredacted_view",
    "record_with_payload",
    "redact_task",
    "rules",
]

from dataclasses import replace
from typing import Any, TypeVar

from .audit import record_action
from .conf import taskq_settings
from .engine import TaskInfo
from .engine.redaction import Redaction
from .engine.workflows import WorkflowInfo
from .redaction_rules import mask_detail, rules

T = TypeVar("T")

UNREDACTED_PERMISSION = "taskq.view_unredacted"
#: The audit action of every look at unredacted values.
VIEW_ACTION = "task.view_unredacted"


def can_see_unredacted(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.has_perm(UNREDACTED_PERMISSION))


def masked(task_type: str, data: bytes) -> bytes:
    """A payload or result of ``task_type`` as anyone may see it under the configured rules."""
    return rules().apply(task_type, data) or b""


def redact_task(task: TaskInfo, redaction: Redaction | None = None) -> TaskInfo:
    """A copy of ``task`` as a person without the permission may see it: its payload and result masked by every
    rule, its headers and error text by the patterns (``mask_task_text``)."""
    redaction = rules() if redaction is None else redaction
    if not redaction:
        return task
    return replace(
        mask_task_text(task, redaction),
        payload=redaction.apply(task.type, task.payload) or b"",
        result=redaction.apply(task.type, task.result),
    )


def is_redacted(task: TaskInfo, redaction: Redaction | None = None) -> bool:
    """Whether anything of the task's payload, result, headers or error text is masked."""
    redaction = rules() if redaction is None else redaction
    if redaction.hides(task.type, task.payload) or redaction.hides(task.type, task.result):
        return True
    return bool(redaction.patterns) and mask_task_text(task, redaction) != task


#: The text fields of a task, or of the record the task page shows of a gone one, that the patterns mask: error
#: messages and tracebacks are written by handlers and API consumers, and may quote anything.
_TEXT_FIELDS = ("last_error", "last_traceback", "outcome")


def mask_task_text(task: T, redaction: Redaction | None = None) -> T:
    """``task`` (a ``TaskInfo``, or any dataclass with some of its text fields) with its headers' values and its
    error text masked by the patterns; the same object when nothing is. Error text a worker wrote is masked
    already (``Failure.redacted``); this masks what an API consumer wrote, and what was written before a pattern
    was added."""
    redaction = rules() if redaction is None else redaction
    if not redaction.patterns:
        return task
    changes: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        value = getattr(task, name, None)
        if isinstance(value, str) and redaction.mask_string(value) is not value:
            changes[name] = redaction.mask_string(value)
    headers = getattr(task, "headers", None)
    if isinstance(headers, dict) and any(redaction.mask_string(v) is not v for v in headers.values()):
        changes["headers"] = redaction.mask_headers(headers)
    return replace(task, **changes) if changes else task  # type: ignore[type-var]


def mask_events(events: list[Any], redaction: Redaction | None = None) -> list[Any]:
    """A task's events (``TaskEvent``s) with their error text masked by the patterns, for the task page's history
    and attempts, which every viewer of the task sees alike."""
    redaction = rules() if redaction is None else redaction
    if not redaction.patterns:
        return events
    return [
        replace(e, error=redaction.mask_string(e.error))
        if getattr(e, "error", "") and redaction.mask_string(e.error) is not e.error
        else e
        for e in events
    ]


def mask_event_entry(entry: dict[str, Any], redaction: Redaction | None = None) -> dict[str, Any]:
    """An event as the live feed sends it (``StreamEvent.as_dict``), its ``error`` masked by the patterns."""
    error = entry.get("error")
    if not error:
        return entry
    redaction = rules() if redaction is None else redaction
    return {**entry, "error": redaction.mask_string(error)}


def mask_workflow(info: WorkflowInfo) -> WorkflowInfo:
    """A workflow with its error and its members' errors masked by the patterns: they are the error text of the
    member that failed or stalls."""
    redaction = rules()
    if not redaction.patterns:
        return info
    members = [replace(m, error=redaction.mask_string(m.error)) if m.error else m for m in info.members]
    error = redaction.mask_string(info.error) if info.error else info.error
    return replace(info, members=members, error=error)


def mask_error_groups(groups: list[Any]) -> list[Any]:
    """Error groups (``ErrorGroup``) with their messages masked by the patterns: a worker masks a failure before
    it is grouped, but a group may be older than a pattern."""
    redaction = rules()
    if not redaction.patterns:
        return groups
    return [replace(g, message=redaction.mask_string(g.message)) for g in groups]


def mask_string(text: str) -> str:
    """Any other text a person reads that may quote a task's data (an audit entry's detail, a live message):
    what the patterns match, masked."""
    return rules().mask_string(text)


def record_unredacted_view(user: Any, queue: str, task_ids: list[str], where: str, username: str = "") -> None:
    """One audit entry per look: who (``username`` when there is no Django user, e.g. ``cli:alice``), which
    queue and tasks, and from where."""
    record_action(user, VIEW_ACTION, queue=queue, task_ids=task_ids, detail=where, username=username)


def record_with_payload(
    user: Any, action: str, queue: str, task_ids: list[str], task_type: str, payload: bytes, detail: Any
) -> None:
    """An audit entry whose detail shows a payload of ``task_type``: ``detail(payload)`` (a function of the
    payload's bytes to the entry's text) as whoever reads the log may see it, masked by ``TASKS_REDACT``; with
    ``TASKS_AUDIT_UNREDACTED``, and only when masking changed something, the same in full beside it
    (``unredacted_detail``, shown only through the admin's audited "Show unredacted original")."""
    shown = masked(task_type, payload)
    full = detail(payload) if shown != payload and taskq_settings().audit_unredacted else ""
    record_action(user, action, queue=queue, task_ids=task_ids, detail=detail(shown), unredacted_detail=full)
