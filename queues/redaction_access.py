"""``TASKS_REDACT`` as every place that shows a payload or result to a person applies it (console pages, the
admin's task view, the live feed, the CLI), who may see through it, and the audit entry each look writes.

The rules themselves (types by prefix, JSON keys at any depth) live in ``queues.engine.redaction``, the setting in
``queues.conf.taskq_settings()`` (``TASKS_REDACT``, or ``TASKS_REDACT_TYPES``/``TASKS_REDACT_KEYS``); this module
builds them from it, and is the one place that knows the permission and the audit action.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .conf import taskq_settings
from .engine import TaskInfo, ValidationError
from .engine.redaction import Redaction

UNREDACTED_PERMISSION = "queues.view_unredacted"
#: The audit action of every look at unredacted values.
VIEW_ACTION = "task.view_unredacted"


def rules() -> Redaction:
    """The configured rules. A bad ``TASKS_REDACT`` raises ImproperlyConfigured naming what is wrong (the queues
    app calls this at start-up, so a typo stops the console, the worker and the CLI rather than leaking)."""
    taskq = taskq_settings()
    return _build(taskq.redact_types, taskq.redact_keys, taskq.max_payload_depth)


@lru_cache(maxsize=16)
def _build(types: tuple[str, ...], keys: tuple[str, ...], max_depth: int) -> Redaction:
    try:
        return Redaction.build(types, keys, max_depth)
    except ValidationError as exc:
        raise ImproperlyConfigured(f"TASKS_REDACT (TASKS_REDACT_TYPES / TASKS_REDACT_KEYS): {exc.message}") from None


def can_see_unredacted(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.has_perm(UNREDACTED_PERMISSION))


def masked(task_type: str, data: bytes) -> bytes:
    """A payload or result of ``task_type`` as anyone may see it under the configured rules."""
    return rules().apply(task_type, data) or b""


def redact_task(task: TaskInfo, redaction: Redaction | None = None) -> TaskInfo:
    """A copy of ``task`` with its payload and result as a person without the permission may see them."""
    redaction = rules() if redaction is None else redaction
    if not redaction:
        return task
    return replace(
        task, payload=redaction.apply(task.type, task.payload) or b"", result=redaction.apply(task.type, task.result)
    )


def is_redacted(task: TaskInfo, redaction: Redaction | None = None) -> bool:
    """Whether anything of the task's payload or result is masked."""
    redaction = rules() if redaction is None else redaction
    return redaction.hides(task.type, task.payload) or redaction.hides(task.type, task.result)


def record_unredacted_view(user: Any, queue: str, task_ids: list[str], where: str, username: str = "") -> None:
    """One audit entry per look: who (``username`` when there is no Django user, e.g. ``cli:alice``), which
    queue and tasks, and from where."""
    from .audit import record_action  # models: imported on use, so this module loads before the app registry

    record_action(user, VIEW_ACTION, queue=queue, task_ids=task_ids, detail=where, username=username)


def record_with_payload(
    user: Any, action: str, queue: str, task_ids: list[str], task_type: str, payload: bytes, detail: Any
) -> None:
    """An audit entry whose detail shows a payload of ``task_type``: ``detail(payload)`` (a function of the
    payload's bytes to the entry's text) as whoever reads the log may see it, masked by ``TASKS_REDACT``; with
    ``TASKS_AUDIT_UNREDACTED``, and only when masking changed something, the same in full beside it
    (``unredacted_detail``, shown only through the admin's audited "Show unredacted original")."""
    from .audit import record_action

    shown = masked(task_type, payload)
    full = detail(payload) if shown != payload and taskq_settings().audit_unredacted else ""
    record_action(user, action, queue=queue, task_ids=task_ids, detail=detail(shown), unredacted_detail=full)
