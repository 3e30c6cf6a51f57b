"""The operators' audit log: every mutating action of the console and the admin is recorded here."""

from __future__ import annotations

from typing import Any

from .models import AuditLog
from .redaction_rules import mask_detail

MAX_DETAIL = 10_000
#: Task ids an entry keeps, at most; ``task_count`` says how many tasks the action took (a "delete all" of a
#: million tasks is one entry, not a million ids).
AUDIT_TASK_IDS = 100


def action_name(verb: str, what: str) -> str:
    """The audit name of doing ``verb`` to ``what``: ``pause_queue``, ``run_task``, ``add_queuedefinition`` (as
    Django names its permissions), the admin's and the console's alike; migration 0006 renamed the admin's older
    ``queue.pause`` entries to it."""
    return f"{verb}_{what}"


def record_action(
    user: Any,
    action: str,
    queue: str = "",
    task_ids: list[str] | None = None,
    detail: str = "",
    username: str = "",
    task_count: int | None = None,
    unredacted_detail: str = "",
) -> AuditLog:
    """Record that ``user`` (a User, AnonymousUser or None) did ``action`` on ``queue`` and ``task_ids``.
    ``username`` names an actor that is no Django user (the CLI's ``cli:<login>``). ``task_count`` is how many
    tasks the action took when that is more than the ids given (a whole state's); by default, the ids'.
    ``detail`` holds what the actor was allowed to see (payloads masked by ``TASKS_REDACT``); ``unredacted_detail``
    the same in full, which the caller passes only when ``TASKS_AUDIT_UNREDACTED`` asks for it. Whatever the
    caller wrote, ``detail`` is kept with what ``TASKS_REDACT_PATTERNS`` matches masked (a header, a search, an
    error quoted in it), since everyone who reads the log reads it.

    ``action`` is named ``<verb>_<object>`` (``action_name``) after the button that does it (the Resume button:
    ``resume_queue``), wherever it is pressed: the console and the admin write the same names."""
    ids = [str(task_id) for task_id in task_ids or []]
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    entry: AuditLog = AuditLog.objects.create(
        user=user if authenticated else None,
        username=user.get_username() if authenticated else username[:150],
        action=action[:64],
        queue=queue[:128],
        task_ids=ids[:AUDIT_TASK_IDS],
        task_count=len(ids) if task_count is None else task_count,
        detail=mask_detail(detail)[:MAX_DETAIL],
        unredacted_detail=unredacted_detail[:MAX_DETAIL],
    )
    return entry
