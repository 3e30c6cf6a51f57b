"""Helpers of the live-console tests: logged-in session cookies, WebSocket clients on the real ASGI app, and a
driver that moves tasks through the engine's own transition scripts (what a worker does)."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client as HttpClient

from taskq.queues.engine import Client
from taskq.queues.engine.broker import Broker

ORIGIN = b"http://localhost"
WAIT = 10.0  # seconds a test waits for an expected message before failing (a guard, not a timing assertion)
#: The sockets the running body (see ``run``) has opened, disconnected after it, when it fails too.
_opened: ContextVar[list[WebsocketCommunicator]] = ContextVar("opened")

# What a page shows, read the same way from the live page and from a fresh load of it.
READ_PAGE = """
var text = function (el) { return el ? el.textContent.replace(/\\s+/g, " ").trim() : null; };
var all = function (css) { return Array.prototype.slice.call(document.querySelectorAll(css)); };
var cells = function (tr) { return Array.prototype.map.call(tr.children, text).join(" | "); };
var chart = document.querySelector("[data-live-chart]");
return {
  figures: all("dl.figures > div").map(text),
  tabs: all("nav.tabs a").map(text),
  types: all("[data-live-types] tr").map(cells),
  tasks: all("table.tasks tbody tr[data-live-task]:not(.live-left)").map(function (tr) {
    return tr.getAttribute("data-live-task"); }).sort(),
  queues: all("#queues-table tbody tr[data-live-for]").map(cells),
  chart: chart ? chart.innerHTML : null
};
"""


def make_user(username: str, *codenames: str, **extra: Any):
    user = get_user_model().objects.create_user(username, password="pw-for-tests-only", **extra)
    content_type, _ = ContentType.objects.get_or_create(app_label="taskq", model="auditlog")
    for codename in codenames:
        permission, _ = Permission.objects.get_or_create(
            codename=codename, content_type=content_type, defaults={"name": codename}
        )
        user.user_permissions.add(permission)
    return user


def session_cookie(user) -> str:
    client = HttpClient()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def open_socket(
    cookie: str | None, origin: bytes = ORIGIN, application: Any = None, path: str = "/ws/live/"
) -> tuple[WebsocketCommunicator, bool]:
    """A socket on ``path`` of ``application`` (the standalone console's by default), as a browser of ``origin``
    opens it, signed in with ``cookie``'s session; and whether the server accepted it."""
    if application is None:
        from taskq.console.asgi import application

    headers = [(b"origin", origin), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    socket = WebsocketCommunicator(application, path, headers=headers)
    _opened.get([]).append(socket)
    connected, _code = await socket.connect(timeout=WAIT)
    if not connected:
        # End the refused consumer the way a server does, with websocket.disconnect; left running, it would only
        # be cancelled when the test's event loop closes, in the middle of its wait on the channel layer.
        await socket.disconnect()
    return socket, connected


async def subscribe(socket: WebsocketCommunicator, scope: str, **fields: Any) -> dict[str, Any]:
    """Subscribe and return the first (catch-up) message."""
    await socket.send_json_to({"op": "subscribe", "scope": scope, **fields})
    return await socket.receive_json_from(timeout=WAIT)


async def receive_until(
    socket: WebsocketCommunicator, done, messages: list[dict[str, Any]], kinds: tuple[str, ...] = ()
) -> None:
    """Receive messages into ``messages`` until ``done(messages)`` holds; fails after WAIT seconds of silence.
    With ``kinds``, other kinds of messages are read and dropped (a queue page also gets ``queue`` snapshots)."""
    while not done(messages):
        message = await socket.receive_json_from(timeout=WAIT)
        if not kinds or message["kind"] in kinds:
            messages.append(message)


async def stop_hub() -> None:
    """Stop this loop's hub and close its connection (a console process going away)."""
    from taskq.console.live import process_hub

    hub = process_hub._hubs.pop(asyncio.get_running_loop(), None)
    if hub is not None:
        await hub.stop()
        await hub.streams.close()


def run(body):
    """Run a test body in an event loop of its own (a new loop gets a new hub: what a console restart looks like
    to a browser), then disconnect the sockets it opened and stop the hub."""

    async def wrapped():
        opened: list[WebsocketCommunicator] = []
        _opened.set(opened)
        try:
            return await body()
        finally:
            for socket in opened:
                await socket.disconnect()
            await stop_hub()

    return asyncio.run(wrapped())


def latest_rows(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The latest row of each task over a sequence of update messages."""
    rows: dict[str, dict[str, Any]] = {}
    for message in messages:
        for row in message.get("tasks", ()):
            rows[row["id"]] = row
    return rows


class Driver:
    """Moves tasks like a worker would: enqueue, dequeue (pending -> active), complete or done."""

    def __init__(self, redis_url: str) -> None:
        self.client = Client(redis_url)
        self.broker = Broker(redis_url)
        self.ops = self.broker.transitions

    def enqueue(self, queue: str = "default", n: int = 1, **options: Any) -> list[str]:
        if n == 1:
            return [self.client.enqueue("live:test", {"n": 0}, queue=queue, **options).id]
        return [
            info.id
            for info in self.client.enqueue_many([("live:test", {"n": i}) for i in range(n)], queue=queue, **options)
        ]

    def start(self, queue: str = "default", k: int = 1) -> list[tuple[str, str]]:
        leased = self.broker.run(self.ops.dequeue(queue, k, 60, "test-worker", "tok-"))
        return [(t.id, t.token) for t in leased]

    def complete(self, queue: str, leases: list[tuple[str, str]], result: bytes | None = None) -> None:
        if result is not None:
            for task_id, token in leases:
                self.broker.run(self.ops.write_result(queue, task_id, token, "result", result))
        self.broker.run(self.ops.complete(queue, [(i, t, 600.0) for i, t in leases], "test-worker"))

    def close(self) -> None:
        self.client.close()
        self.broker.close()
