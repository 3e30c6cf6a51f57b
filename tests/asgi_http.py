"""The scope of one HTTP request as an ASGI server hands it to the application, for tests that call Django's ASGI
handler or the console's ASGI application directly, below the test client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections


def http_scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """A request from 127.0.0.1 to ``path`` (no query string) with these headers (``host`` among them)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


def call_django(scope: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[int, Any]:
    """Send ``messages`` (``http.request`` ones) to Django's ASGI handler under ``scope``; the response's status
    and its JSON body. async_to_sync keeps the handler's database access on this thread, and the signals that would
    close its connection are off, as Django's test client has them (the test's transaction)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not messages:  # the client waits for its answer: Django takes a disconnect as the end of the request
            await asyncio.Event().wait()
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        async_to_sync(ASGIHandler())(scope, receive, send)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
