"""Who may do what in the console, stated once and applied to every view as a decorator.

Two roles, both plain Django permissions on the queues app (granted through the groups "Console viewers" and
"Console operators"; superusers hold every permission):

- ``taskq.view_console``: read every page.
- ``taskq.operate_console``: also pause, resume and delete queues and act on tasks. Operating implies viewing.

Two more are held by no group, and granted user by user: ``taskq.edit_task`` (edit and retry a task) and
``taskq.create_task`` (a new task, or a task run again as a new one).

Every action is a POST (so the CSRF middleware checks its token) and is refused while the console runs in
read-only mode (``TASKS_CONSOLE_READ_ONLY``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from taskq.queues.request_trace import request_context

from .errors import engine_errors, error_page
from .permissions import OPERATE_PERMISSION, can_create, can_edit, can_view, read_only

View = Callable[..., HttpResponse]


NOT_A_VIEWER = (
    "Your account may not view the console. Ask an administrator to add you to the “Console viewers” or "
    "“Console operators” group."
)


def forbidden(request: HttpRequest, message: str, title: str = "Permission denied") -> HttpResponse:
    return error_page(request, 403, title, message)


def _permitted_form(allowed: Callable[[Any], bool], refusal: str) -> Callable[[View], View]:
    """A form page that only ``allowed`` users may open and submit: GET shows it, POST applies it (CSRF-checked);
    login; refused in read-only mode (saying so) and to the others (``refusal`` names the permission)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not allowed(request.user):
                if read_only():
                    message = "The console runs in read-only mode (TASKS_CONSOLE_READ_ONLY)."
                    return forbidden(request, message, "Read-only")
                return forbidden(request, refusal)
            with request_context(request):  # an edit records the operator's context on the task
                return view(request, *args, **kwargs)

        return cast(View, require_http_methods(["GET", "HEAD", "POST"])(login_required(engine_errors(wrapper))))

    return decorate


#: The edit-and-retry form: ``taskq.edit_task``.
editor_form = _permitted_form(
    can_edit,
    "Editing a task takes the “Can edit a retry or archived task's payload and options and run it” permission, "
    "which an administrator grants user by user.",
)
#: The new task form, and "Run again as a new task": ``taskq.create_task``.
creator_form = _permitted_form(
    can_create,
    "Creating a task takes the “Can create a task from the console” permission, which an administrator grants "
    "user by user.",
)


def viewer_page(view: View) -> View:
    """A read-only page: GET/HEAD only, login, the view permission; engine errors become error pages."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not can_view(request.user):
            return forbidden(request, NOT_A_VIEWER)
        return view(request, *args, **kwargs)

    return cast(View, require_safe(login_required(engine_errors(wrapper))))


def operator_action(view: View) -> View:
    """A mutating action: POST only (CSRF-checked), login, the operate permission, not in read-only mode."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if read_only():
            return forbidden(
                request,
                "The console runs in read-only mode (TASKS_CONSOLE_READ_ONLY): actions are disabled.",
                "Read-only mode",
            )
        if not request.user.has_perm(OPERATE_PERMISSION):
            return forbidden(
                request,
                "Your account may view the console but not act on queues or tasks. Operators are members of the "
                "“Console operators” group.",
            )
        with request_context(request):  # an action on a task records the operator's context on it
            return view(request, *args, **kwargs)

    return cast(View, require_POST(login_required(engine_errors(wrapper))))


def user_form(view: View) -> View:
    """A page that edits the user's own preferences: login and the view permission, GET shows, POST saves."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not can_view(request.user):
            return forbidden(request, "Your account may not view the console.")
        return view(request, *args, **kwargs)

    return cast(View, require_http_methods(["GET", "HEAD", "POST"])(login_required(wrapper)))
