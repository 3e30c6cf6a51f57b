"""The per-process live hub: one reader of the engine's event streams, one flusher, and the pages they feed.

Each console process runs exactly one hub on its event loop, started by the first WebSocket that subscribes.
The reader tails every queue's stream with XREAD BLOCK (``EventTail``; new queues are picked up within about a
second) and feeds a ``Coalescer``. The flusher sends at most one message per subscription key every
``LIVE_INTERVAL`` seconds: at once when the key has been quiet (an isolated transition is not delayed), else when
the interval since the last send has passed (a burst becomes four messages a second, whatever its rate). Counts
are read fresh for the changed queues, in one pipeline per tick. While a dashboard or a queue page is open, a
third task sends what changed on it beyond counts (``console/live/dashboard.py``, ``console/live/queue_page.py``).

Fan-out is in process: the hub hands each message straight to the subscribed consumers of its own process
(``Subscriber.deliver``), so an open page costs no Redis connection and no channel-layer group (channels-redis's
connection pool would cap a process at 99 live pages). Redis sees one reader per process, one counts pipeline per
tick and the snapshots, whatever the number of pages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from taskq.queues import conf
from taskq.queues.engine.actions import task_actions_for
from taskq.queues.engine.errors import EngineError, TaskNotFoundError
from taskq.queues.engine.events import AsyncEventStreams, StreamEvent
from taskq.queues.periodic_sync import scheduler_store
from taskq.queues.redaction_access import mask_string, masked
from taskq.queues.rendering import render_bytes

from ..renderers import render_server_row, server_usage
from ..summary_bar import summary_figures
from ..task_page import EDITABLE, GoneTask, read_task, render_sections, sections_context
from .coalesce import Coalescer, QueueWindow, Window
from .dashboard import DASHBOARD_IDLE, DASHBOARD_INTERVAL, DashboardDelta, dashboard_snapshot
from .queue_page import QueuePageDelta, queue_page_snapshots
from .queue_tabs import TAB, SnapshotDelta, tab_snapshots
from .schedulers_page import CRON_TASK_PREFIX, schedulers_fingerprint
from .workflow_page import workflow_snapshot

log = logging.getLogger("taskq.console.live")
T = TypeVar("T")

LIVE_INTERVAL = 0.25  # seconds between two messages of one subscription key, at least
BLOCK_MS = 1000  # XREAD BLOCK timeout: how long the reader waits before re-listing queues
SERVERS_REFRESH = 5.0  # the server registry emits no events: re-read it this often while someone watches
RESULT_PREVIEW_BYTES = 4096
STOP_RECANCEL = 0.5  # seconds ``LiveHub.stop`` waits for a cancelled task before cancelling it again

GLOBAL, QUEUE, TASK, SERVERS, WORKFLOW, SCHEDULERS = "all", "q", "t", "servers", "wf", "cron"
WORKFLOWS = "wfs"  # the workflows list
SUMMARY = "summary"  # a page that is live for its summary bar only


#: Catch-up reads (replay, counts) of newly subscribed pages running at once: what bounds the hub's Redis
#: connections when a thousand pages (re)connect together (after a console restart, say).
CATCH_UP_READS = 8

Key = tuple[str, ...]


class LiveMessage:
    """One message for every subscriber of a key: its data, and its JSON text, encoded once on first use (a
    thousand pages of one queue must not cost a thousand encodings of the same rows)."""

    __slots__ = ("data", "_text")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = json.dumps(self.data)
        return self._text


class Subscriber(Protocol):
    """What the hub needs of a page's consumer: take a message without waiting (``deliver``), and be told that it
    cannot be served now (``refuse``: the page is told, shows it is not live, and retries)."""

    def deliver(self, message: LiveMessage) -> None: ...

    def refuse(self, reason: str) -> None: ...


class LiveHub:
    """Reader + coalescer + flusher for one process. ``watch``/``unwatch`` keep the local subscribers of each key
    (dashboard, one queue, one task, servers, one workflow, the schedulers page), so nothing is built for keys
    nobody in this process watches."""

    def __init__(
        self,
        streams: AsyncEventStreams,
        *,
        interval: float = LIVE_INTERVAL,
        block_ms: int = BLOCK_MS,
        inspector: Callable[[], Any] | None = None,
        dashboard_interval: float = DASHBOARD_INTERVAL,
        dashboard_idle: float = DASHBOARD_IDLE,
    ):
        self.streams = streams
        self.interval = interval
        self.block_ms = block_ms
        self.dashboard_interval = dashboard_interval
        self.dashboard_idle = dashboard_idle
        self.inspector = inspector or default_inspector
        self.tail = streams.tail()
        self.coalescer = Coalescer()
        self.watchers: dict[Key, set[Subscriber]] = {}
        self.ready = asyncio.Event()
        self.failing = ""  # why the event streams cannot be read now; empty while they can
        self.catch_up_reads = asyncio.Semaphore(CATCH_UP_READS)
        self.messages_sent = 0  # for tests and the bench: messages handed to subscribers so far
        self._dirty = asyncio.Event()
        self._last_flush = 0.0
        self._servers_json = ""
        self._servers_read_at = 0.0
        self._dashboard_due = asyncio.Event()  # events arrived since the last dashboard snapshot
        self._dashboard_delta = DashboardDelta()
        self._queue_page_delta = QueuePageDelta()
        self._tab_delta = SnapshotDelta()
        # Per watched workflow: its member ids (which events concern it) and the snapshot last sent.
        self._workflow_members: dict[Key, set[str]] = {}
        self._workflow_sent: dict[Key, str] = {}
        self._schedulers_seen = ""  # the schedulers fingerprint last read while a schedulers page was open
        self._summary_sent = ""  # the summary bar's figures last sent to every page
        self._tasks: list[asyncio.Task[None]] = []

    # -- subscribers -------------------------------------------------------------------------------------------

    def watch(self, subscriber: Subscriber, kind: str, *key: str) -> None:
        self.watchers.setdefault((kind, *key), set()).add(subscriber)
        if kind == SUMMARY:
            self._summary_sent = ""  # the page may have rendered its bar before the figures last sent: resend them
        if kind == SERVERS:
            self._servers_json = ""  # a new watcher gets a snapshot from its consumer; resend on next change
        if kind == GLOBAL:
            self._dashboard_delta.reset()  # likewise: the next round sends the whole dashboard
        if kind == QUEUE:
            self._queue_page_delta.reset(key[0])  # and the queue's banner figures and task types
            self._dashboard_due.set()
        if kind == TAB:
            self._tab_delta.reset((kind, *key))  # the next round sends the tab's rows, whatever was sent before
            self._dashboard_due.set()
        if kind == WORKFLOW:
            self._workflow_sent.pop((kind, *key), None)  # the next change is sent, whatever was sent before
        if kind == SCHEDULERS:
            self._dashboard_due.set()  # read its fingerprint soon

    def unwatch(self, subscriber: Subscriber, kind: str, *key: str) -> None:
        subscribers = self.watchers.get((kind, *key))
        if subscribers is not None:
            subscribers.discard(subscriber)
            if not subscribers:
                del self.watchers[(kind, *key)]
                self._workflow_members.pop((kind, *key), None)
                self._workflow_sent.pop((kind, *key), None)

    def watching(self, kind: str, *key: str) -> bool:
        return bool(self.watchers.get((kind, *key)))

    @property
    def sockets(self) -> int:
        return sum(len(subscribers) for subscribers in self.watchers.values())

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._read_loop(), name="live-reader"),
                asyncio.create_task(self._flush_loop(), name="live-flusher"),
                asyncio.create_task(self._dashboard_loop(), name="live-dashboard"),
            ]

    async def stop(self) -> None:
        """Cancel the hub's tasks and wait until each has ended, cancelling again one still running ``STOP_RECANCEL``
        seconds later: redis-py sends every command through ``asyncio.wait_for`` (its socket timeout), which loses a
        cancellation on Python 3.11 (see ``woken``), so a reader stopped as it sends its XREAD reads on."""
        tasks, self._tasks = self._tasks, []
        pending = set(tasks)
        while pending:
            for task in pending:
                task.cancel()
            _ended, pending = await asyncio.wait(pending, timeout=STOP_RECANCEL)
        await asyncio.gather(*tasks, return_exceptions=True)  # all ended: collects what each raised

    async def _read_loop(self) -> None:
        while True:
            try:
                # The first read only places the tail (block 1 ms) so ``ready`` is set as soon as the tail stands
                # at the streams' ends: a consumer waits for it before replaying, which closes the gap between
                # its replay and the live events.
                events = await self.streams.read(self.tail, 1 if not self.ready.is_set() else self.block_ms)
                self.ready.set()
                if self.failing:
                    log.info("live: reading the event streams again")
                    self.failing = ""
            except EngineError as exc:
                if not self.failing:
                    log.warning("live: cannot read the event streams (%s); retrying", exc)
                    self.failing = f"the event streams cannot be read ({exc})"
                    self._refuse_all(self.failing)
                await asyncio.sleep(1.0)
                continue
            if not self.tail.positions:
                await asyncio.sleep(self.block_ms / 1000)  # no queue yet: XREAD would return at once
            if events:
                self.accept(events)

    def _refuse_all(self, reason: str) -> None:
        """Tell every page it is not live any more; each reconnects and resumes from its cursor once it can."""
        for subscribers in list(self.watchers.values()):
            for subscriber in list(subscribers):
                subscriber.refuse(reason)

    def accept(self, events: list[StreamEvent]) -> None:
        """Feed events into the current window (the reader calls this; tests may too)."""
        watched = {(key[1], key[2]) for key in self.watchers if key[0] == TASK}
        self.coalescer.add(events, watched)
        self._dirty.set()
        self._dashboard_due.set()

    async def _flush_loop(self) -> None:
        while True:
            if not await woken(self._dirty, SERVERS_REFRESH):
                await self._guarded(self._servers, None)
                continue
            wait = self._last_flush + self.interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)  # the coalescing window: events keep arriving meanwhile
            self._dirty.clear()
            self._last_flush = time.monotonic()
            await self._guarded(self.flush, self.coalescer.drain())

    async def _dashboard_loop(self) -> None:
        """The dashboard and queue page snapshots, apart from the 250 ms flusher: they read whole queues, so they
        run at most every ``dashboard_interval`` seconds, and every ``dashboard_idle`` seconds when nothing
        happened (latency grows while nothing happens)."""
        while True:
            await woken(self._dashboard_due, self.dashboard_idle)
            self._dashboard_due.clear()
            await self._guarded(self._dashboard, None)
            await self._guarded(self._queue_pages, None)
            await self._guarded(self._queue_tabs, None)
            await self._guarded(self._schedulers_page, None)
            await self._guarded(self._summary, None)
            await asyncio.sleep(self.dashboard_interval)

    async def _guarded(self, fn: Callable[[Any], Any], arg: Any) -> None:
        try:
            await fn(arg)
        except asyncio.CancelledError:
            raise
        except Exception:  # one failed send must not end live updates for the whole process
            log.exception("live: sending an update failed")

    # -- sending -----------------------------------------------------------------------------------------------

    async def flush(self, window: Window) -> None:
        """Send one message per watched key touched by ``window``."""
        if not window.queues:
            return
        queues = [
            q
            for q in window.queues
            if self.watching(GLOBAL)
            or self.watching(QUEUE, q)
            or any(k[0] == TASK and k[1] == q for k in self.watchers)
        ]
        counts = await self._counts(queues)
        if queues and not counts:
            # Redis did not answer: the rows go out now, the counts on the next tick, even if no event comes (a
            # page must not keep counts from before a burst it was told about).
            for queue in queues:
                self.coalescer.touch(queue)
            self._dirty.set()
        cursor = {q: w.last_id for q, w in window.queues.items() if w.last_id}
        if self.watching(GLOBAL):
            self._send(
                (GLOBAL,),
                {"kind": "update", "scope": "dashboard", "queues": counts, "cursor": cursor, "events": window.events},
            )
        for queue, qwin in window.queues.items():
            if self.watching(QUEUE, queue):
                self._send((QUEUE, queue), queue_message(queue, qwin, counts.get(queue)))
        for (queue, task_id), history in window.histories.items():
            if self.watching(TASK, queue, task_id):
                message = await self.task_message(
                    queue, task_id, history, counts.get(queue), window.queues[queue].last_id
                )
                self._send((TASK, queue, task_id), message)
        await self._workflows(window)
        if self.watching(SCHEDULERS) and any(
            task_id.startswith(CRON_TASK_PREFIX) for qwin in window.queues.values() for task_id in qwin.tasks
        ):
            self._send((SCHEDULERS,), {"kind": "schedulers"})  # a run moved: the pages read their sections again
        if self.watching(WORKFLOWS) and window.events:
            # Any task may be a workflow's member, and events do not say which: the lists read themselves again
            # (at most every 2 s, live.js), whatever moved, and settle on a fresh load's rows.
            self._send((WORKFLOWS,), {"kind": "workflows"})
        if (
            any(w.active_moved for w in window.queues.values())
            or time.monotonic() - self._servers_read_at >= SERVERS_REFRESH
        ):
            await self._servers(None)

    async def _workflows(self, window: Window) -> None:
        """Send each watched workflow's page when an event of the window touched one of its members (or its members
        are not known yet), and what it shows changed."""
        for key in [k for k in self.watchers if k[0] == WORKFLOW and k[1] in window.queues]:
            _, queue, workflow_id = key
            members = self._workflow_members.get(key)
            if members is not None and members.isdisjoint(window.queues[queue].tasks):
                continue
            try:
                snapshot = await asyncio.to_thread(workflow_snapshot, self.inspector(), queue, workflow_id)
            except EngineError as exc:  # Redis away: the next event of the queue reads it again
                log.warning("live: cannot read workflow %s (%s)", workflow_id, exc)
                self._workflow_members.pop(key, None)
                continue
            self._workflow_members[key] = set(snapshot.pop("members", ()))
            encoded = json.dumps(snapshot, sort_keys=True)
            if self._workflow_sent.get(key) != encoded:
                self._workflow_sent[key] = encoded
                self._send(key, snapshot)

    async def task_message(
        self, queue: str, task_id: str, history: list[dict[str, Any]], counts: dict[str, int] | None, last_id: str
    ) -> dict[str, Any]:
        detail = await asyncio.to_thread(
            task_detail, self.inspector(), queue, task_id, history[-1]["to"] if history else ""
        )
        return {
            "kind": "update",
            "scope": "task",
            "queues": {queue: counts} if counts else {},
            "cursor": {queue: last_id},
            "tasks": history[-1:],
            "history": history,
            "detail": detail,
        }

    async def _servers(self, _arg: Any) -> None:
        """Send the server registry to the servers pages when it changed (or ``SERVERS_REFRESH`` passed)."""
        if not self.watching(SERVERS):
            return
        # Warned, as the other reads of a round are, while Redis is away: the next round reads again.
        self._servers_read_at = time.monotonic()
        snapshot = await read_or_warn("the servers", servers_snapshot, self.inspector())
        if snapshot is None:
            return
        encoded = json.dumps(snapshot, sort_keys=True)
        if encoded != self._servers_json:
            self._servers_json = encoded
            self._send((SERVERS,), {"kind": "servers", "servers": snapshot})

    async def _dashboard(self, _arg: Any) -> None:
        """Send what changed on the dashboard since the last round to the dashboards, if anything did."""
        if not self.watching(GLOBAL):
            return
        try:
            snapshot = await self.dashboard_snapshot()
        except EngineError as exc:  # Redis away: the next round tries again
            log.warning("live: cannot read the dashboard (%s)", exc)
            return
        delta = self._dashboard_delta(snapshot)
        if delta is not None:
            self._send((GLOBAL,), delta)

    async def _queue_pages(self, _arg: Any) -> None:
        """Send each watched queue's page snapshot when it changed since the last round."""
        queues = sorted(key[1] for key in self.watchers if key[0] == QUEUE)
        if not queues:
            return
        snapshots = await read_or_warn("the queue pages", queue_page_snapshots, self.inspector(), queues)
        if snapshots is None:
            return
        for snapshot in self._queue_page_delta(snapshots):
            self._send((QUEUE, snapshot["queue"]), snapshot)

    async def _queue_tabs(self, _arg: Any) -> None:
        """Send each watched queue tab's rows when they changed since the last round (``queue_tabs.py``)."""
        keys = sorted(key for key in self.watchers if key[0] == TAB)
        if not keys:
            return
        tabs = await read_or_warn("the queue tabs", tab_snapshots, self.inspector(), keys)
        if tabs is None:
            return
        for key, snapshot in self._tab_delta(tabs):
            self._send(key, snapshot)

    async def _schedulers_page(self, _arg: Any) -> None:
        """Tell the schedulers pages to read their sections again when what changes there without an event (a
        pause, a scheduler that starts, an entry's next run) changed since the last round."""
        if not self.watching(SCHEDULERS):
            self._schedulers_seen = ""
            return
        fingerprint = await read_or_warn("the schedulers", schedulers_fingerprint, scheduler_store())
        if fingerprint is None:
            return
        if fingerprint != self._schedulers_seen:
            self._schedulers_seen = fingerprint
            self._send((SCHEDULERS,), {"kind": "schedulers"})

    async def _summary(self, _arg: Any) -> None:
        """Send the summary bar's figures to the pages that asked for them, when they changed since the last round:
        one read for all the pages of the process."""
        if not self.watching(SUMMARY):
            return
        figures = await read_or_warn("the summary bar", summary_figures, self.inspector())
        if figures is None:
            return
        encoded = json.dumps(figures, sort_keys=True)
        if encoded != self._summary_sent:
            self._summary_sent = encoded
            self._send((SUMMARY,), {"kind": "summary", "summary": figures})

    async def dashboard_snapshot(self) -> dict[str, Any]:
        return await asyncio.to_thread(dashboard_snapshot, self.inspector())

    async def servers_snapshot(self) -> list[dict[str, Any]]:
        self._servers_read_at = time.monotonic()
        return await asyncio.to_thread(servers_snapshot, self.inspector())

    async def _counts(self, queues: list[str]) -> dict[str, dict[str, int]]:
        if not queues:
            return {}
        try:
            return await self.streams.counts(queues)
        except EngineError as exc:  # rows still go out; the counts follow with the next update
            log.warning("live: cannot read queue counts (%s)", exc)
            return {}

    def _send(self, key: Key, data: dict[str, Any]) -> None:
        """Hand ``data`` to every subscriber of ``key``. Never waits: a consumer queues it and sends it on its own
        task, so one slow browser does not hold up the others."""
        self.messages_sent += 1
        message = LiveMessage(data)
        for subscriber in list(self.watchers.get(key, ())):
            subscriber.deliver(message)


async def woken(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set, at most ``timeout`` seconds; whether it was. Not ``asyncio.wait_for``: on Python
    3.11 it returns the awaited result, and the cancellation is lost, when the task is cancelled just as the event
    is set, and a hub's loop that lost it would run on. ``asyncio.timeout`` tells its own expiry from a
    cancellation, so a loop waiting here always ends when the hub stops."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def read_or_warn(what: str, read: Callable[..., T], *args: Any) -> T | None:
    """``read(*args)`` on a thread, so the event loop keeps serving sockets; None, with a warning naming ``what``,
    while Redis is away: the hub's next round reads again."""
    try:
        return await asyncio.to_thread(read, *args)
    except EngineError as exc:
        log.warning("live: cannot read %s (%s)", what, exc)
        return None


def queue_message(queue: str, qwin: QueueWindow, counts: dict[str, int] | None) -> dict[str, Any]:
    rows, more = qwin.summary()
    return {
        "kind": "update",
        "scope": "queue",
        "queues": {queue: counts} if counts else {},
        "cursor": {queue: qwin.last_id} if qwin.last_id else {},  # none for a window that only recounts
        "tasks": rows,
        "more": more,
        "events": qwin.events,
    }


def task_detail(inspector: Any, queue: str, task_id: str, last_to: str) -> dict[str, Any]:
    """What the task page shows beyond the event: state, retries, error, progress and the rendered result, and
    ``sections``: the page's live sections (badges, fields, attempts, history) rendered by its own partials from
    the same reads a page load makes (``console/task_page.py``), which the page swaps in whole, so it reads as a
    fresh load and lists no event twice. A task that is gone reads as ``completed`` (done: deleted on success, no
    retention) or ``deleted``, and its sections as the page renders a gone task from its events. One message feeds
    every watcher of the task, so its result is masked as TASKS_REDACT says, whoever watches; the sections hold no
    payload nor result."""
    try:
        task, events = read_task(inspector, queue, task_id)
        sections = render_sections(sections_context(inspector, queue, task, events))
    except TaskNotFoundError:  # no hash and no event left: nothing more to show than the event's word
        return {"state": "completed" if last_to == "done" else "deleted", "gone": True}
    except EngineError as exc:
        return {"error": str(exc)}
    if isinstance(task, GoneTask):
        return {"state": task.state, "gone": True, "outcome": task.outcome, "sections": sections, "actions": []}
    result = None
    if task.result is not None:
        shown = masked(task.type, task.result)
        rendered = render_bytes(shown[:RESULT_PREVIEW_BYTES])
        result = {
            "kind": rendered.kind,
            "text": rendered.text,
            "size": len(shown),
            "truncated": rendered.truncated or len(shown) > RESULT_PREVIEW_BYTES,
            "redacted": shown != task.result,
        }
    return {
        "state": task.state,
        "since": _iso(task.state_since),
        "retried": task.retried,
        "max_retry": task.max_retry,
        "last_error": mask_string(task.last_error or ""),
        "result": result,
        "progress": list(task.progress) if task.progress else None,
        "sections": sections,
        "actions": task_actions_for(task.state),
        "editable": task.state in EDITABLE,
    }


def servers_snapshot(inspector: Any) -> list[dict[str, Any]]:
    """Every server, with ``row``: the servers page's own table row (no actions, nothing per user), which the
    page adds for a server that started after it was rendered."""
    return [
        {
            "id": s.id,
            "host": s.host,
            "pid": s.pid,
            "status": s.status,
            "concurrency": s.concurrency,
            "started": _iso(s.started_at),
            "queues": s.queues,
            "running": [
                {
                    "id": t.get("id", ""),
                    "type": t.get("type", ""),
                    "queue": t.get("queue", ""),
                    "started": t.get("started"),
                }
                for t in s.active
            ],
            "usage": {
                k: v for k, v in server_usage(s).items() if k not in ("age", "late", "now")
            },  # the page ticks those
            "row": render_server_row(s),
        }
        for s in inspector.servers()
    ]


def _iso(when: Any) -> str | None:
    return when.isoformat() if when is not None else None


def default_inspector() -> Any:
    """The process's inspector, looked up per use (a change of settings gives the new one's)."""
    return conf.get_inspector()
