"""The console's WebSocket: ``/ws/live/``.

The socket is accepted only for a logged-in user with ``queues.view_console`` (or operate; superusers hold
both); ``console/asgi.py`` has already refused foreign Origins. The page then sends one subscription::

    {"op": "subscribe", "scope": "dashboard" | "queue" | "task" | "servers",
     "queue": "<name>", "task": "<id>", "cursor": {"<queue>": "<last event id seen>"}}

and gets, at once, what it missed since ``cursor`` (replayed from the stream with XRANGE; the page renders the
cursor it was read at, so even the first connection misses nothing), then the live updates of its group::

    {"kind": "update", "scope": ..., "queues": {"<queue>": {"pending": 3, ..., "size": 7}},
     "cursor": {"<queue>": "<id>"}, "tasks": [{"id", "queue", "type", "from", "to", "at", "event", ...}],
     "more": <rows left out>, "resync": <true when the gap could not be replayed>}
    {"kind": "servers", "servers": [...]}
    {"kind": "dashboard", "chart": "<svg…>", "rows": [{"queue", "href", "paused", "cells"}]}  (see dashboard.py)

A subscription replaces the previous one. Bad input gets ``{"kind": "error"}`` and changes nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from queues.engine.errors import EngineError
from queues.engine.events import later, stream_id_key
from queues.engine.validation import queue_name as check_queue_name
from queues.engine.validation import task_id as check_task_id

from ..access import can_view
from .coalesce import coalesce
from .hub import GLOBAL, QUEUE, SERVERS, TASK, LiveHub, live_hub, queue_message

SCOPES = ("dashboard", "queue", "task", "servers")
REPLAY_LIMIT = 10_000  # events replayed to one queue page; past it the page is told to resync
TASK_REPLAY_SCAN = 20_000  # stream entries scanned to replay one task's events
MAX_CURSOR_ENTRIES = 1000
READY_TIMEOUT = 10.0
_STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


class BadSubscription(ValueError):
    pass


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """One page's live feed. Group messages arrive one at a time, after the current handler (a replay) ends."""

    hub: LiveHub

    async def connect(self) -> None:
        user = self.scope.get("user")
        # The middleware only fills in the user; the access rule is ours. Closing before accept() refuses the
        # handshake (HTTP 403), so an anonymous or unprivileged browser never gets a socket.
        if user is None or not await database_sync_to_async(can_view)(user):
            await self.close()
            return
        self.subscription: tuple[str, ...] | None = None
        self.seen: dict[str, str] = {}
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        try:
            scope, queue, task, cursor = parse_subscription(content)
        except BadSubscription as exc:
            await self.send_json({"kind": "error", "message": str(exc)})
            return
        await self._leave()
        self.hub = live_hub()
        try:
            # The reader must stand at the streams' ends before we replay, or events in between are lost.
            async with asyncio.timeout(READY_TIMEOUT):
                await self.hub.ready.wait()
        except TimeoutError:
            await self.send_json(
                {"kind": "error", "message": "the event streams cannot be read (is Redis up?)", "resync": True}
            )
            return
        if scope == "dashboard":
            key: tuple[str, ...] = (GLOBAL,)
        elif scope == "servers":
            key = (SERVERS,)
        elif scope == "queue":
            key = (QUEUE, queue)
        else:
            key = (TASK, queue, task)
        await self.channel_layer.group_add(self.hub.watch(*key), self.channel_name)
        self.subscription = key
        try:
            await self._catch_up(scope, queue, task, cursor)
        except EngineError as exc:
            await self.send_json({"kind": "error", "message": str(exc), "resync": True})

    async def _leave(self) -> None:
        subscription = getattr(self, "subscription", None)
        if subscription is not None:
            self.hub.unwatch(*subscription)
            await self.channel_layer.group_discard(self.hub.group(*subscription), self.channel_name)
            self.subscription = None
            self.seen = {}

    async def _catch_up(self, scope: str, queue: str, task: str, cursor: dict[str, str]) -> None:
        """Send what the page missed: replayed events after its cursor, and counts read now."""
        streams = self.hub.streams
        if scope == "servers":
            await self.send_json({"kind": "servers", "servers": await self.hub.servers_snapshot()})
            return
        if scope == "dashboard":
            # The dashboard shows counts only, and counts read now are exact: no need to replay events.
            queues = await streams.queues()
            all_counts = await streams.counts(queues)
            now = await streams.cursor(queues)
            self.seen.update(now)
            await self.send_json(
                {
                    "kind": "update",
                    "scope": "dashboard",
                    "queues": all_counts,
                    "cursor": now,
                    "events": 0,
                    "replay": True,
                }
            )
            # Then the rest of the page as it is now (chart, latency, memory, queues that appeared or went).
            await self.send_json(await self.hub.dashboard_snapshot())
            return
        after = cursor.get(queue)
        if after is None:  # no position: start from now, with fresh counts
            after = (await streams.cursor([queue]))[queue]
        if scope == "queue":
            replay = await streams.replay(queue, after, REPLAY_LIMIT)
            counts = (await streams.counts([queue]))[queue]
            message = queue_message(queue, coalesce(replay.events).queues.get(queue) or _empty(), counts)
        else:
            replay = await streams.replay(queue, after, TASK_REPLAY_SCAN, task_id=task)
            counts = (await streams.counts([queue]))[queue]
            history = [e.as_dict() for e in replay.events]
            message = await self.hub.task_message(queue, task, history, counts, replay.last_id)
            message["tasks"] = history[-1:]
        message["cursor"] = {queue: replay.last_id}
        message["replay"] = True
        message["resync"] = not replay.complete
        self.seen[queue] = replay.last_id
        await self.send_json(message)

    async def live_update(self, message: dict[str, Any]) -> None:
        """A hub message for our group. Rows already sent by the replay are dropped (the replay may have read
        further than the live message that was queued behind it), so a page never steps back in time."""
        data = message["data"]
        if data.get("kind") == "update":
            data = dict(data)
            seen = self.seen
            fresh = [row for row in data.get("tasks", ()) if _newer(row.get("event", ""), seen.get(row["queue"]))]
            if len(fresh) != len(data.get("tasks", ())):
                data["tasks"] = fresh
                if "history" in data:
                    data["history"] = [
                        row for row in data["history"] if _newer(row.get("event", ""), seen.get(row["queue"]))
                    ]
            for queue, last in data.get("cursor", {}).items():
                seen[queue] = later(last, seen.get(queue, "0-0"))
        await self.send_json(data)


def _newer(event_id: str, seen: str | None) -> bool:
    return seen is None or stream_id_key(event_id) > stream_id_key(seen)


def _empty() -> Any:
    from .coalesce import QueueWindow

    return QueueWindow()


def parse_subscription(content: Any) -> tuple[str, str, str, dict[str, str]]:
    """(scope, queue, task id, cursor) of a subscribe message, or BadSubscription saying what is wrong."""
    if not isinstance(content, dict) or content.get("op") != "subscribe":
        raise BadSubscription('expected {"op": "subscribe", ...}')
    scope = content.get("scope")
    if scope not in SCOPES:
        raise BadSubscription(f"scope must be one of {', '.join(SCOPES)}")
    queue = content.get("queue") or ""
    task = content.get("task") or ""
    try:
        if scope in ("queue", "task"):
            check_queue_name(queue, "live.subscribe")
        if scope == "task":
            check_task_id(task, "live.subscribe")
    except EngineError as exc:
        raise BadSubscription(str(exc)) from None
    raw = content.get("cursor") or {}
    if not isinstance(raw, dict) or len(raw) > MAX_CURSOR_ENTRIES:
        raise BadSubscription("cursor must map queue names to stream ids")
    cursor = {}
    for name, position in raw.items():
        if not isinstance(position, str) or not _STREAM_ID.match(position):
            raise BadSubscription(f"bad stream id in cursor: {position!r}")
        cursor[str(name)] = position
    return scope, queue, task, cursor
