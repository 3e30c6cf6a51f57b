"""The system check ``taskq.W131``: the project's ASGI application routes the live console's WebSocket.

Forgetting ``with_taskq`` in the project's ASGI module (or setting no ``ASGI_APPLICATION``) leaves every console
page loading and saying "reconnecting…" for ever: nothing fails where a developer looks. The check imports the
application ``ASGI_APPLICATION`` names, as Channels' runserver and daphne do, and looks for the router
``with_taskq`` adds, through Channels' ``ProtocolTypeRouter`` and through middleware that keeps the application it
wraps as ``app``, ``application`` or ``inner`` (the names ASGI middleware use). A wrapper that hides it otherwise
can silence the warning with ``SILENCED_SYSTEM_CHECKS = ["taskq.W131"]``. A worker's own checks leave it out: a
worker serves no pages, and building the project's ASGI application (its middleware included) would only slow its
start.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.utils.module_loading import import_string

from taskq.queues import tasks_checks
from taskq.queues.engine.quoting import shown

HINT = (
    "At the end of your ASGI module, `from taskq.asgi import with_taskq` and "
    "`application = with_taskq(application)`, and point ASGI_APPLICATION at it (docs/getting-started.md)."
)
#: Attributes under which ASGI middleware keeps the application it wraps, and Channels' routers their routes.
WRAPPED = ("app", "application", "inner")
#: How deep the search goes: a project's middleware stack is a few layers, a cycle of references is not followed.
DEPTH = 8


def routes_live_socket(application: Any, depth: int = DEPTH) -> bool:
    """Whether ``application`` is, or wraps, the router ``with_taskq`` adds (``serves_taskq_live``)."""
    if getattr(type(application), "serves_taskq_live", False):
        return True
    if depth == 0:
        return False
    inner = [getattr(application, name, None) for name in WRAPPED]
    mapping = getattr(application, "application_mapping", None)  # Channels' ProtocolTypeRouter
    if isinstance(mapping, dict):
        inner.extend(mapping.values())
    return any(found is not None and routes_live_socket(found, depth - 1) for found in inner)


@checks.register()
def check_live_socket_routed(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if not apps.is_installed("taskq.console") or tasks_checks.for_a_worker():
        return []
    path = getattr(settings, "ASGI_APPLICATION", None)
    if not path:
        problem = "ASGI_APPLICATION is not set, so the live console's pages cannot connect their WebSocket"
    else:
        try:
            application = import_string(path)
        except Exception as exc:  # the project's own module: whatever it raises is the finding
            problem = f"ASGI_APPLICATION {shown(path)} cannot be imported ({type(exc).__name__}: {shown(str(exc))})"
        else:
            if routes_live_socket(application):
                return []
            problem = (
                f"ASGI_APPLICATION {shown(path)} does not route the live console's WebSocket: "
                "the console's pages load but never go live"
            )
    return [checks.Warning(problem, hint=HINT, id="taskq.W131")]
