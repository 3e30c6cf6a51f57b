"""The operators' audit log: every mutating action of the console and the admin is recorded here."""

from __future__ import annotations

from typing import Any

from .models import AuditLog

MAX_DETAIL = 10_000


def record_action(
    user: Any, action: str, queue: str = "", task_ids: list[str] | None = None, detail: str = "", username: str = ""
) -> AuditLog:
    """Record that ``user`` (a User, AnonymousUser or None) did ``action`` on ``queue`` and ``task_ids``.
    ``username`` names an actor that is no Django user (the CLI's ``cli:<login>``)."""
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    entry: AuditLog = AuditLog.objects.create(
        user=user if authenticated else None,
        username=user.get_username() if authenticated else username[:150],
        action=action[:64],
        queue=queue[:128],
        task_ids=[str(task_id) for task_id in task_ids or []],
        detail=detail[:MAX_DETAIL],
    )
    return entry
