"""The live console's WebSocket, added to a project's own ASGI application in one line::

    from django.core.asgi import get_asgi_application
    from taskq.asgi import with_taskq

    application = with_taskq(get_asgi_application())

``with_taskq`` takes Django's ASGI handler or a project's own Channels ``ProtocolTypeRouter``. HTTP, and every
WebSocket that is not the console's, go where they went before; the console's socket (``taskq:live``, found by
resolving the socket's path in the URLconf, so it follows wherever ``taskq.urls`` is mounted) goes through the
Origin check and the session's user only, and its consumer checks that user's permission itself. The console
needs no channel layer: its hub hands each update to the sockets of its own process (``taskq.console.live.hub``).
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter
from channels.security.websocket import AllowedHostsOriginValidator

from taskq.console.live.routing import is_live_socket

ASGIApp = Any  # an ASGI application: ``async (scope, receive, send) -> None``

__all__ = ["with_taskq"]


def with_taskq(application: ASGIApp) -> ASGIApp:
    """``application`` with the live console's WebSocket added. Call it after ``get_asgi_application()`` (which
    sets Django up): the socket's middleware needs the auth models loaded."""
    # before setup: a project's asgi.py imports this module before Django is set up; the consumer needs the models
    from taskq.console.live.consumers import LiveConsumer

    console_socket = AllowedHostsOriginValidator(AuthMiddlewareStack(LiveConsumer.as_asgi()))
    if isinstance(application, ProtocolTypeRouter):
        mapping = dict(application.application_mapping)
        mapping["websocket"] = ConsoleSocketRouter(console_socket, mapping.get("websocket"))
        return ProtocolTypeRouter(mapping)
    return ProtocolTypeRouter({"http": application, "websocket": ConsoleSocketRouter(console_socket, None)})


class ConsoleSocketRouter:
    """Sends the console's WebSocket to the console and every other one to the project's own WebSocket
    application; with none, a socket elsewhere is refused (closed before it opens: HTTP 403)."""

    #: What the system check taskq.W131 looks for in the project's ASGI application (console/live/socket_check.py).
    serves_taskq_live = True

    def __init__(self, console: ASGIApp, project: ASGIApp | None) -> None:
        self.console = console
        self.project = project

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if is_live_socket(scope):
            await self.console(scope, receive, send)
        elif self.project is not None:
            await self.project(scope, receive, send)
        else:
            await receive()  # the client's websocket.connect, answered by refusing it
            await send({"type": "websocket.close"})
