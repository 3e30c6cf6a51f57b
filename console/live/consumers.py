"""The console's WebSocket, at ``taskq:live`` (``ws/live/`` under where the project mounts taskq.urls).

The socket is accepted only for a logged-in user with ``taskq.view_console`` (or operate; superusers hold
both); ``taskq.asgi.with_taskq`` has already refused foreign Origins. The page then sends one subscription::

    {"op": "subscribe", "scope": "dashboard" | "queue" | "task" | "servers" | "workflow" | "workflows" | "schedulers"
     | "summary",
     "queue": "<name>", "task": "<id>", "workflow": "<id>", "cursor": {"<queue>": "<last event id seen>"},
     "summary": true,  (the summary bar's figures too, beside the scope's own messages)
     "tab": {"state": "retry", "page": 1, "size": 20}}  (a queue page: the rows of the tab it shows too)

and gets, at once, what it missed since ``cursor`` (replayed from the stream with XRANGE; the page renders the
cursor it was read at, so even the first connection misses nothing), then the live updates of its group::

    {"kind": "update", "scope": ..., "queues": {"<queue>": {"pending": 3, ..., "size": 7}},
     "cursor": {"<queue>": "<id>"}, "tasks": [{"id", "queue", "type", "from", "to", "at", "event", ...}],
     "more": <rows left out>, "resync": <true when the gap could not be replayed: the page re-reads its lists>}
    {"kind": "servers", "servers": [...]}
    {"kind": "dashboard", "chart": "<svg…>", "rows": [{"queue", "href", "paused", "cells"}]}  (see dashboard.py)
    {"kind": "workflow", "queue", "workflow", "state", "actions", "html"}  (see workflow_page.py)
    {"kind": "tab", "queue", "state", "page", "size", "ids", "rows": "<tr…>"}  (see queue_tabs.py)
    {"kind": "schedulers"}  (read the page's sections again: see schedulers_page.py)
    {"kind": "workflows"}  (tasks moved: the workflows list reads itself again)
    {"kind": "summary", "summary": {"processed_today": ..., "servers_up": ...}}  (all pages: console/summary_bar.py)

A subscription replaces the previous one. Bad input gets ``{"kind": "error"}`` and changes nothing. A page the
process cannot serve now (the event streams cannot be read, or it already serves ``MAX_SOCKETS`` pages) gets
``{"kind": "error", "retry": true, "message": <why>}`` and the socket is closed with 4013 (try again later): the
page shows it is not live and reconnects, resuming from its cursor, so it never sits frozen looking live.

The consumer uses no channel layer: the hub of its own process hands it messages (``deliver``), which it queues
(at most ``INBOX`` of them) and sends from a task of its own, one at a time and never during a catch-up.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from taskq.queues.engine.errors import EngineError
from taskq.queues.engine.events import later, stream_id_key
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.validation import queue_name as check_queue_name
from taskq.queues.engine.validation import task_id as check_task_id

from ..permissions import can_view
from ..summary_bar import summary_figures
from .coalesce import QueueWindow, coalesce
from .hub import (
    GLOBAL,
    QUEUE,
    SCHEDULERS,
    SERVERS,
    SUMMARY,
    TASK,
    WORKFLOW,
    WORKFLOWS,
    Key,
    LiveHub,
    LiveMessage,
    queue_message,
)
from .process_hub import live_hub
from .queue_tabs import parse_tab, tab_key
from .workflow_page import workflow_snapshot

SCOPES = ("dashboard", "queue", "task", "servers", "workflow", "workflows", "schedulers", "summary")
REPLAY_LIMIT = 10_000  # events replayed to one queue page; past it the page is told to resync
TASK_REPLAY_SCAN = 20_000  # stream entries scanned to replay one task's events
MAX_CURSOR_ENTRIES = 1000
READY_TIMEOUT = 10.0
#: Live pages one console process serves at most; past it a page is told to retry (another process behind the
#: load balancer, or this one once pages close). Measured: bench/live_sockets.py, docs/benchmarks.md.
MAX_SOCKETS = 2000
#: Messages queued for one page; a page further behind is told to reconnect (see ``deliver``).
INBOX = 64
#: ``CHANNEL_LAYERS`` defines no layer of this name, so Channels gives the consumer none: no channel name, no
#: group, no Redis connection per socket.
NO_CHANNEL_LAYER = "live-hub-fans-out-in-process"
# WebSocket close code: try again later. Not 1013, its IANA code: daphne (autobahn) lets a server close only with
# 1000 or an application code (3000-4999).
RETRY_LATER = 4013
_STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


class BadSubscription(ValueError):
    pass


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """One page's live feed, a ``Subscriber`` of the process's hub."""

    channel_layer_alias = NO_CHANNEL_LAYER
    hub: LiveHub

    async def connect(self) -> None:
        user = self.scope.get("user")
        # The middleware only fills in the user; the access rule is ours. Closing before accept() refuses the
        # handshake (HTTP 403), so an anonymous or unprivileged browser never gets a socket.
        if user is None or not await database_sync_to_async(can_view)(user):
            await self.close()
            return
        self.subscription: Key | None = None
        self.summary_too = False  # also watching the summary bar (the subscribe message asked for it)
        self.tab: Key | None = None  # also watching the rows of a queue tab (the subscribe message named it)
        self.seen: dict[str, str] = {}
        self.inbox: asyncio.Queue[tuple[int, LiveMessage]] = asyncio.Queue(INBOX)
        self.generation = 0  # of the subscription; messages queued for an earlier one are dropped
        self.turn = asyncio.Lock()  # a catch-up and the live messages never interleave
        self.refusal: asyncio.Task[None] | None = None
        await self.accept()
        self.pump = asyncio.create_task(self._pump(), name="live-consumer-pump")

    async def disconnect(self, code: int) -> None:
        self._leave()
        pump = getattr(self, "pump", None)
        if pump is not None:
            pump.cancel()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        try:
            scope, queue, task, cursor = parse_subscription(content)
            tab = parse_tab(content) if scope == "queue" else None
        except (BadSubscription, ValueError) as exc:
            await self.send_json({"kind": "error", "message": str(exc)})
            return
        async with self.turn:
            self._leave()
            self.hub = live_hub()
            try:
                # The reader must stand at the streams' ends before we replay, or events in between are lost.
                async with asyncio.timeout(READY_TIMEOUT):
                    await self.hub.ready.wait()
            except TimeoutError:
                await self._refuse("the event streams cannot be read (is Redis up?)")
                return
            if self.hub.failing or self.hub.sockets >= MAX_SOCKETS:
                await self._refuse(self.hub.failing or f"this console process serves its most pages ({MAX_SOCKETS})")
                return
            key: Key = {
                "dashboard": (GLOBAL,),
                "servers": (SERVERS,),
                "schedulers": (SCHEDULERS,),
                "workflows": (WORKFLOWS,),
                "summary": (SUMMARY,),
                "queue": (QUEUE, queue),
                "workflow": (WORKFLOW, queue, task),
            }.get(scope, (TASK, queue, task))
            self.hub.watch(self, *key)
            self.subscription = key
            if content.get("summary") is True and key != (SUMMARY,):
                # The page's summary bar too: its messages come beside the subscription's own.
                self.hub.watch(self, SUMMARY)
                self.summary_too = True
            if tab is not None:
                # The rows of the page's tab too: the hub renders them as the page does (queue_tabs.py).
                self.tab = tab_key(queue, *tab)
                self.hub.watch(self, *self.tab)
            try:
                async with self.hub.catch_up_reads:
                    await self._catch_up(scope, queue, task, cursor)
            except EngineError as exc:
                await self._refuse(str(exc))

    # -- Subscriber --------------------------------------------------------------------------------------------

    def deliver(self, message: LiveMessage) -> None:
        try:
            self.inbox.put_nowait((self.generation, message))
        except asyncio.QueueFull:
            # The browser reads slower than updates come. Snapshots are sent only when they change, so a page
            # that lost one could stay wrong: it reconnects instead, and its catch-up brings it up to date.
            self.refuse("this page fell behind the live updates")

    def refuse(self, reason: str) -> None:
        if self.refusal is None:
            self.refusal = asyncio.create_task(self._refuse(reason))

    async def _refuse(self, reason: str) -> None:
        self._leave()
        await self.send_json({"kind": "error", "message": reason, "retry": True})
        await self.close(code=RETRY_LATER)

    def _leave(self) -> None:
        subscription = getattr(self, "subscription", None)
        if subscription is not None:
            self.hub.unwatch(self, *subscription)
            if getattr(self, "summary_too", False):
                self.hub.unwatch(self, SUMMARY)
                self.summary_too = False
            tab = getattr(self, "tab", None)
            if tab is not None:
                self.hub.unwatch(self, *tab)
                self.tab = None
            self.subscription = None
            self.seen = {}
            self.generation += 1

    async def _pump(self) -> None:
        """Send the queued live messages, one at a time, each after any catch-up in progress."""
        while True:
            generation, message = await self.inbox.get()
            async with self.turn:
                if generation != self.generation:
                    continue
                await self.live_update(message)

    async def _catch_up(self, scope: str, queue: str, task: str, cursor: dict[str, str]) -> None:
        """Send what the page missed: replayed events after its cursor, and counts read now."""
        streams = self.hub.streams
        if scope == "servers":
            await self.send_json({"kind": "servers", "servers": await self.hub.servers_snapshot(), "replay": True})
            return
        if scope == "summary":  # a page live for its summary bar only: the figures now
            figures = await asyncio.to_thread(summary_figures, self.hub.inspector())
            await self.send_json({"kind": "summary", "summary": figures, "replay": True})
            return
        if scope in ("schedulers", "workflows"):
            # The page reads its sections again now: whatever changed while it loaded or was disconnected shows.
            await self.send_json({"kind": scope, "replay": True})
            return
        if scope == "workflow":
            # A snapshot read now is exact, as the dashboard's counts are: nothing to replay. The hub reads the
            # workflow again on the next event of one of its members, which it watches from before this read.
            snapshot = await asyncio.to_thread(workflow_snapshot, self.hub.inspector(), queue, task)
            snapshot.pop("members", None)
            await self.send_json({**snapshot, "replay": True})
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
        # A gap (the stream trimmed past the cursor, by its cap or at the exporter's committed offset while the
        # console was down, or more events than the replay takes) leaves the page's lists short of what happened:
        # the page reads them again from the server (live.js, ``data-live-resync``). A task page needs nothing
        # more: its sections come rendered whole from the task and its history, exported events included.
        message["resync"] = not replay.complete and not message.get("detail", {}).get("sections")
        self.seen[queue] = replay.last_id
        await self.send_json(message)

    async def live_update(self, message: LiveMessage) -> None:
        """A hub message for our subscription. Rows already sent by the replay are dropped (the replay may have
        read further than the live message that was queued behind it), so a page never steps back in time. Rows
        come oldest first, so when the first is new all are, and the page gets the message's shared text."""
        data = message.data
        if data.get("kind") != "update" or data.get("scope") == "dashboard":  # no rows to filter
            await self.send(text_data=message.text)
            return
        seen = self.seen
        rows, history = data.get("tasks", ()), data.get("history", ())
        if any(r and not _newer(r[0].get("event", ""), seen.get(r[0]["queue"])) for r in (rows, history)):
            data = {**data, "tasks": [row for row in rows if _newer(row.get("event", ""), seen.get(row["queue"]))]}
            if history:
                data["history"] = [row for row in history if _newer(row.get("event", ""), seen.get(row["queue"]))]
        for queue, last in data.get("cursor", {}).items():
            seen[queue] = later(last, seen.get(queue, "0-0"))
        if data is message.data:
            await self.send(text_data=message.text)
        else:
            await self.send_json(data)


def _newer(event_id: str, seen: str | None) -> bool:
    return seen is None or stream_id_key(event_id) > stream_id_key(seen)


def _empty() -> QueueWindow:
    return QueueWindow()


def parse_subscription(content: Any) -> tuple[str, str, str, dict[str, str]]:
    """(scope, queue, task or workflow id, cursor) of a subscribe message, or BadSubscription saying what is
    wrong."""
    if not isinstance(content, dict) or content.get("op") != "subscribe":
        raise BadSubscription('expected {"op": "subscribe", ...}')
    scope = content.get("scope")
    if scope not in SCOPES:
        raise BadSubscription(f"scope must be one of {', '.join(SCOPES)}")
    queue = content.get("queue") or ""
    # A workflow's id is a task id by its rules, and takes the task's place in the subscription's key.
    task = (content.get("workflow") if scope == "workflow" else content.get("task")) or ""
    try:
        if scope in ("queue", "task", "workflow"):
            check_queue_name(queue, "live.subscribe")
        if scope in ("task", "workflow"):
            check_task_id(task, "live.subscribe")
    except EngineError as exc:
        raise BadSubscription(str(exc)) from None
    raw = content.get("cursor") or {}
    if not isinstance(raw, dict) or len(raw) > MAX_CURSOR_ENTRIES:
        raise BadSubscription("cursor must map queue names to stream ids")
    cursor = {}
    for name, position in raw.items():
        if not isinstance(position, str) or not _STREAM_ID.match(position):
            raise BadSubscription(f"bad stream id in cursor: {shown(position)}")
        cursor[str(name)] = position
    return scope, queue, task, cursor
