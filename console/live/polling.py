"""The live hub over a Redis that writes no event stream (asynq's keys, ``TASKS_KEY_FORMAT = "asynq"``): one poller
per console process instead of the stream reader.

asynq's transitions append no event anywhere, so nothing can be tailed. ``PollingHub`` keeps ``LiveHub``'s
subscribers, messages and page snapshots, and replaces its three loops (stream reader, 250 ms flusher, dashboard
loop) with one: a round every ``POLL_INTERVAL`` seconds at most, started by the first page that subscribes, however
many pages are open. A round reads every queue's figures once (``Inspector.queue_infos``), sends the counts of the
queues whose figures moved (the stream mode's ``update``, with no task rows: no transition is known), builds the
dashboard from the same read, then reads what the open pages show beyond counts (a queue's banner and tab, the
summary bar, the servers, each watched task, the schedulers), each once for all its pages, and sends what changed.
So Redis sees one round a second from the process; pages see what they would see after a reload, a second late.

``PolledStreams`` stands where ``AsyncEventStreams`` stands for a consumer's catch-up: the queue set and counts read
now, an empty replay (nothing to replay: the catch-up's snapshot is the truth), and no cursor.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from typing import Any

from taskq.queues.engine.errors import EngineError
from taskq.queues.engine.events import Replay

from .dashboard import snapshot_of
from .hub import TASK, Key, LiveHub, log, task_detail

POLL_INTERVAL = 1.0  # seconds between the starts of two rounds, at least
NO_CURSOR = "0-0"  # no stream, no position: what a page's cursor names is never replayed


class PolledStreams:
    """A catch-up's reads for a consumer, through the process's inspector (on a thread: it blocks), in the shape of
    ``AsyncEventStreams`` (``queues``, ``counts``, ``cursor``, ``replay``, ``close``)."""

    def __init__(self, inspector: Any) -> None:
        self.inspector = inspector  # a callable: the process's inspector at the time of the read

    def tail(self) -> None:
        """No stream to tail (``LiveHub`` asks its streams for one)."""
        return None

    async def queues(self) -> list[str]:
        return list(await asyncio.to_thread(lambda: self.inspector().queues()))

    async def counts(self, queues: Iterable[str]) -> dict[str, dict[str, int]]:
        names = list(queues)
        if not names:
            return {}
        infos = await asyncio.to_thread(lambda: self.inspector().queue_infos(names))
        return {info.queue: info.live_counts() for info in infos}

    async def cursor(self, queues: Iterable[str]) -> dict[str, str]:
        return dict.fromkeys(queues, NO_CURSOR)

    async def replay(self, queue: str, after: str, limit: int = 10_000, task_id: str | None = None) -> Replay:
        return Replay(queue, [], after, True)

    async def close(self) -> None:
        """Nothing of its own to close: the inspector is the process's."""


class PollingHub(LiveHub):
    """``LiveHub`` fed by one poller per process (see the module's docstring). ``rounds`` counts the rounds read so
    far (tests and the bench compare it with the time passed)."""

    def __init__(self, streams: PolledStreams, *, poll_interval: float = POLL_INTERVAL, **options: Any) -> None:
        super().__init__(streams, inspector=streams.inspector, **options)  # type: ignore[arg-type]
        self.poll_interval = poll_interval
        self.rounds = 0
        self._figures: dict[str, dict[str, int]] = {}  # each queue's counts as the last round read them
        self._infos: list[Any] = []  # the last round's QueueInfo of every queue, for the dashboard
        self._task_sent: dict[Key, str] = {}  # per watched task: the detail last sent

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._poll_loop(), name="live-poller")]

    def unwatch(self, subscriber: Any, kind: str, *key: str) -> None:
        super().unwatch(subscriber, kind, *key)
        if not self.watching(kind, *key):
            self._task_sent.pop((kind, *key), None)

    async def _poll_loop(self) -> None:
        while True:
            began = time.monotonic()
            await self._guarded(self.poll_once, None)
            await asyncio.sleep(max(0.0, began + self.poll_interval - time.monotonic()))

    async def poll_once(self, _arg: Any = None) -> None:
        """One round: read, then send what changed on every open page."""
        self.rounds += 1
        try:
            infos = await asyncio.to_thread(_all_queue_infos, self.inspector())
        except EngineError as exc:
            if not self.failing:
                log.warning("live: cannot poll Redis (%s); retrying", exc)
                self.failing = f"Redis cannot be read ({exc})"
                self._refuse_all(self.failing)
            return
        if self.failing:
            log.info("live: polling Redis again")
            self.failing = ""
        self.ready.set()
        figures = {info.queue: info.live_counts() for info in infos}
        moved = [queue for queue, counts in figures.items() if self._figures.get(queue) != counts]
        self._figures, self._infos = figures, infos
        for queue in moved:
            self.coalescer.touch(queue)
        await self._guarded(self.flush, self.coalescer.drain())
        for send in (self._dashboard, self._queue_pages, self._queue_tabs, self._summary, self._servers):
            await self._guarded(send, None)
        await self._guarded(self._schedulers_page, None)
        await self._guarded(self._task_pages, None)

    async def _counts(self, queues: list[str]) -> dict[str, dict[str, int]]:
        """The round's own read: the flush sends it, and reads nothing more."""
        return {queue: self._figures[queue] for queue in queues if queue in self._figures}

    async def dashboard_snapshot(self) -> dict[str, Any]:
        """The dashboard from the round's read (a page that subscribes before the first round reads its own)."""
        if not self._infos:
            return await super().dashboard_snapshot()
        return snapshot_of(self._infos)

    async def _task_pages(self, _arg: Any) -> None:
        """Each watched task's detail, read once for all its pages, sent when it changed: no event says when."""
        for key in sorted(k for k in self.watchers if k[0] == TASK):
            _, queue, task_id = key
            detail = await asyncio.to_thread(task_detail, self.inspector(), queue, task_id, "")
            encoded = json.dumps(detail, sort_keys=True)
            if self._task_sent.get(key) == encoded:
                continue
            self._task_sent[key] = encoded
            counts = self._figures.get(queue)
            message = {
                "kind": "update",
                "scope": "task",
                "queues": {queue: counts} if counts else {},
                "cursor": {},
                "tasks": [],
                "history": [],
                "detail": detail,
            }
            self._send(key, message)


def _all_queue_infos(inspector: Any) -> list[Any]:
    return list(inspector.queue_infos(inspector.queues()))
