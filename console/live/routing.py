"""Where the live console's WebSocket is opened, and what serves it there.

The socket has a URL in the console's URLconf (``taskq:live``, ``ws/live/`` under wherever a project mounts
``taskq.urls``), so the pages reverse it for live.js and ``taskq.asgi.with_taskq`` recognises it by resolving a
socket's path: the two cannot disagree. Over plain HTTP that URL only says it is a WebSocket.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve


def live_socket(request: HttpRequest) -> HttpResponse:
    """The socket's URL fetched over HTTP: 426 Upgrade Required, with the protocol to upgrade to."""
    response = HttpResponse(
        "The live console's WebSocket: open it with a WebSocket client.\n", status=426, content_type="text/plain"
    )
    response["Upgrade"] = "websocket"
    return response


def is_live_socket(scope: dict[str, Any]) -> bool:
    """Whether a WebSocket ``scope`` asks for the live console's socket: its path, below the server's root path,
    resolves to ``live_socket`` in the project's URLconf."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    if root and path.startswith(root):
        path = path[len(root) :]
    try:
        match = resolve(path or "/")
    except Resolver404:
        return False
    return match.func is live_socket
