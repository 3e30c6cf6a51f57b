"""What a console user may do right now: the console's permissions, and the predicates the views, the templates'
context and the live socket test them with (``taskq.console.access`` applies them to every view).
"""

from __future__ import annotations

from typing import Any

from taskq.queues import conf

VIEW_PERMISSION = "taskq.view_console"
OPERATE_PERMISSION = "taskq.operate_console"
#: Edit and retry (a task's payload and options): held by no group by default, granted user by user.
EDIT_PERMISSION = "taskq.edit_task"
#: Create a task from the console: held by no group by default either.
CREATE_PERMISSION = "taskq.create_task"


def read_only() -> bool:
    return conf.taskq_settings().console_read_only


def can_view(user: Any) -> bool:
    return bool(user.is_authenticated) and (user.has_perm(VIEW_PERMISSION) or user.has_perm(OPERATE_PERMISSION))


def can_operate(user: Any) -> bool:
    """Whether the user may act right now: the permission, and the console not in read-only mode."""
    return bool(user.is_authenticated and not read_only() and user.has_perm(OPERATE_PERMISSION))


def can_edit(user: Any) -> bool:
    """Whether the user may edit and retry tasks right now: viewing, the edit permission, not read-only."""
    return can_view(user) and not read_only() and bool(user.has_perm(EDIT_PERMISSION))


def can_create(user: Any) -> bool:
    """Whether the user may create tasks right now ("New task", "Run again as a new task"): viewing, the create
    permission, not read-only."""
    return can_view(user) and not read_only() and bool(user.has_perm(CREATE_PERMISSION))
