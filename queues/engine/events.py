"""Reading the queues' event streams: tail every stream live, replay one from a position, read where each ends.

Every transition script appends one entry to its queue's stream (``tq:{<queue>}:events``: id, type, from, to, at,
worker, error; see ``lua/_lib.lua``). A stream entry id (``<ms>-<seq>``) is the position of an event; a *cursor*
maps queue names to the id of the last event seen there. The live console keeps one ``EventTail`` per process and
hands cursors to browsers, which send them back when they reconnect so nothing between is missed.

Like the producer flows, each read is written once as a generator of requests (``sans_io.Command``/``Batch``) and
run by ``EventStreams`` (on a ``Broker``) or ``AsyncEventStreams`` (on an ``AsyncBroker``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from .broker import AsyncBroker, Broker
from .broker.connection import DEFAULT_REDIS_URL
from .clock import Clock, SystemClock, utc_day
from .errors import ValidationError
from .inspection.queue_stats import QueueInfo, count_unlisted
from .keys import DEFAULT_PREFIX, Keys
from .quoting import shown
from .records import picked
from .sans_io import Batch, Command, Flow

#: States whose structures ``counts`` measures (aggregating and waiting tasks come from the per-type counts).
COUNTED_STATES = ("pending", "active", "scheduled", "retry", "archived", "completed")
#: Queues are re-listed at most this often while tailing, so a new queue is followed within about this long.
QUEUE_REFRESH_SECONDS = 1.0
START = "0-0"


def stream_id_key(entry_id: str) -> tuple[int, int]:
    """A stream id as a sortable pair (``"1700000000000-3"`` -> ``(1700000000000, 3)``); junk sorts first."""
    ms, _, seq = entry_id.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        return (-1, -1)


def later(a: str, b: str) -> str:
    """The later of two stream ids."""
    return a if stream_id_key(a) >= stream_id_key(b) else b


@dataclass(frozen=True)
class StreamEvent:
    """One transition, as read from a queue's stream. ``to`` is a state, or ``done``/``deleted`` when the task left
    the queue; ``from_state`` is empty when it entered (enqueue)."""

    queue: str
    event_id: str
    task_id: str
    type: str
    from_state: str
    to_state: str
    at_ms: int
    worker: str = ""
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "event": self.event_id,
            "id": self.task_id,
            "type": self.type,
            "from": self.from_state,
            "to": self.to_state,
            "at": self.at_ms,
            **picked(self, "worker error"),
        }


def parse_entry(queue: str, entry_id: bytes | str, fields: dict[bytes, bytes]) -> StreamEvent:
    """A stream entry as a StreamEvent; missing or undecodable fields read as empty (never raises)."""

    def text(name: bytes) -> str:
        return fields.get(name, b"").decode("utf-8", "replace")

    try:
        at = int(fields.get(b"at", b"0"))
    except ValueError:
        at = 0
    eid = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return StreamEvent(
        queue, eid, text(b"id"), text(b"type"), text(b"from"), text(b"to"), at, text(b"worker"), text(b"error")
    )


@dataclass
class Replay:
    """Events of one queue after a position, oldest first. ``complete`` is false when more than the limit were
    waiting (``events`` then holds the oldest ones) or when the stream was trimmed past the position, so some
    events can no longer be read: the reader should refresh its whole view instead."""

    queue: str
    events: list[StreamEvent]
    last_id: str
    complete: bool


@dataclass
class EventTail:
    """The position of a live reader in every queue's stream. ``read_flow`` returns the next events of all
    queues, blocking up to ``block_ms`` for the first; queues created after the tail started are followed from
    the tail's start (their first events are not missed), queues that existed before from their end."""

    keys: Keys
    count: int = 1000
    clock: Clock = field(default_factory=SystemClock)
    positions: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # stream id of the tail's start, by Redis's clock (stream ids come from it too)
    _listed_at: float = -1e18

    def read_flow(self, block_ms: int) -> Flow:
        if not self.origin:
            seconds, micros = yield Command("time")
            self.origin = f"{int(seconds) * 1000 + int(micros) // 1000}-0"
            names = yield Command("smembers", (self.keys.queues,))
            yield from self._start(sorted(n.decode() for n in names), at_end=True)
            self._listed_at = self.clock.now()
        elif self.clock.now() - self._listed_at >= QUEUE_REFRESH_SECONDS:
            names = yield Command("smembers", (self.keys.queues,))
            listed = {n.decode() for n in names}
            for gone in set(self.positions) - listed:
                del self.positions[gone]
            yield from self._start(sorted(listed - set(self.positions)), at_end=False)
            self._listed_at = self.clock.now()
        if not self.positions:
            return []
        streams = {self.keys.queue(q).events: position for q, position in self.positions.items()}
        by_stream = {self.keys.queue(q).events: q for q in self.positions}
        reply = yield Command("xread", (streams,), {"block": max(1, block_ms), "count": self.count})
        events: list[StreamEvent] = []
        for stream, entries in reply or []:
            queue = by_stream[stream.decode() if isinstance(stream, bytes) else stream]
            for entry_id, fields in entries:
                events.append(parse_entry(queue, entry_id, fields))
            if entries:
                last = entries[-1][0]
                self.positions[queue] = last.decode() if isinstance(last, bytes) else last
        return events

    def _start(self, queues: list[str], at_end: bool) -> Flow:
        """Set the position of new queues: their stream's last id when the tail starts (what happened before is
        history, not news), else the tail's origin."""
        if not queues:
            return
        if not at_end:
            for queue in queues:
                self.positions[queue] = self.origin
            return
        ends = yield Batch([Command("xrevrange", (self.keys.queue(q).events,), {"count": 1}) for q in queues])
        for queue, newest in zip(queues, ends, strict=True):
            self.positions[queue] = later(_id(newest[0][0]) if newest else START, START)

    def cursor(self) -> dict[str, str]:
        """Where the tail stands in every queue it follows."""
        return dict(self.positions)


def _id(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def cursor_flow(keys: Keys, queues: Iterable[str]) -> Flow:
    """The id of the last event in each queue's stream (``0-0`` for an empty one)."""
    names = list(queues)
    if not names:
        return {}
    ends = yield Batch([Command("xrevrange", (keys.queue(q).events,), {"count": 1}) for q in names])
    return {q: (_id(newest[0][0]) if newest else START) for q, newest in zip(names, ends, strict=True)}


def replay_flow(keys: Keys, queue: str, after: str, limit: int, task_id: str | None = None) -> Flow:
    """Events of ``queue`` after id ``after`` (exclusive), at most ``limit`` of them (with ``task_id``, only that
    task's, scanning at most ``limit`` entries)."""
    stream = keys.queue(queue).events
    after = after if stream_id_key(after) >= (0, 0) else START
    oldest = yield Command("xrange", (stream, "-", "+"), {"count": 1})
    # The stream is capped: if its oldest entry is past the position (and the position is not the very start),
    # entries in between were trimmed away and cannot be replayed.
    trimmed = bool(oldest) and after != START and stream_id_key(_id(oldest[0][0])) > stream_id_key(after)
    entries = yield Command("xrange", (stream, f"({after}", "+"), {"count": limit + 1})
    complete = len(entries) <= limit and not trimmed
    entries = entries[:limit]
    last = _id(entries[-1][0]) if entries else after
    events = [parse_entry(queue, entry_id, fields) for entry_id, fields in entries]
    if task_id is not None:
        events = [e for e in events if e.task_id == task_id]
    return Replay(queue, events, last, complete)


def counts_flow(keys: Keys, queues: Iterable[str], day: str) -> Flow:
    """Per queue: ``QueueInfo.live_counts``, the size of each state (aggregating and waiting ones counted from the
    per-type counts, as ``Inspector.queue_infos`` counts them), ``size``, ``paused`` and the processed and failed
    counters of ``day`` and in total — all read in one MULTI, so they agree with each other."""
    names = list(queues)
    if not names:
        return {}
    commands: list[Command] = []
    for queue in names:
        q = keys.queue(queue)
        commands.append(Command("llen", (q.pending,)))
        commands += [Command("zcard", (q.state_key(s),)) for s in COUNTED_STATES[1:]]
        commands.append(Command("exists", (q.paused,)))
        # Not MGET: a cluster pipeline refuses multi-key commands.
        counters = (q.processed_on(day), q.failed_on(day), q.processed, q.failed)
        commands += [Command("get", (counter,)) for counter in counters]
        commands.append(Command("hgetall", (q.type_counts,)))
    replies = iter((yield Batch(commands)))
    out: dict[str, dict[str, int]] = {}
    for queue in names:
        info = QueueInfo(queue)
        for state in COUNTED_STATES:
            setattr(info, state, int(next(replies)))
        info.paused = bool(next(replies))
        info.processed_today, info.failed_today, info.processed_total, info.failed_total = (
            int(next(replies) or 0) for _ in range(4)
        )
        count_unlisted(info, next(replies))
        out[queue] = info.live_counts()
    return out


BrokerT = TypeVar("BrokerT", Broker, AsyncBroker)


class _Streams(Generic[BrokerT]):
    """What the blocking and the asyncio access share: the broker, the key layout, the clock and the tail. Given
    no broker, they make one of their own on ``redis_url`` (and ``close`` releases it); a broker given is its
    owner's to close, and brings its own key prefix."""

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        prefix: str | None = None,
        broker: BrokerT | None = None,
        clock: Clock | None = None,
    ):
        self._owned = broker is None
        if broker is None:
            broker = self._broker(redis_url, prefix or DEFAULT_PREFIX)
        elif prefix is not None and prefix != broker.keys.prefix:
            raise ValidationError(
                f"prefix {shown(prefix)} differs from the given broker's {shown(broker.keys.prefix)}: give one",
                op="events",
            )
        self.broker: BrokerT = broker
        self.keys = broker.keys
        self.clock = clock or SystemClock()

    def _broker(self, redis_url: str, prefix: str) -> BrokerT:
        raise NotImplementedError

    def tail(self, count: int = 1000) -> EventTail:
        return EventTail(self.keys, count=count, clock=self.clock)


class EventStreams(_Streams[Broker]):
    """Blocking access to the event streams: ``tail()``, ``read(tail)``, ``replay``, ``cursor``, ``counts``."""

    def _broker(self, redis_url: str, prefix: str) -> Broker:
        return Broker(redis_url, prefix=prefix)

    def read(self, tail: EventTail, block_ms: int = 1000) -> list[StreamEvent]:
        """The next events of every queue; blocks up to ``block_ms`` when there are none (socket timeouts of the
        connection must exceed it)."""
        return cast(list[StreamEvent], self.broker.drive("events.read", tail.read_flow(block_ms)))

    def replay(self, queue: str, after: str, limit: int = 10_000, task_id: str | None = None) -> Replay:
        return cast(Replay, self.broker.drive("events.replay", replay_flow(self.keys, queue, after, limit, task_id)))

    def cursor(self, queues: Iterable[str]) -> dict[str, str]:
        return cast(dict[str, str], self.broker.drive("events.cursor", cursor_flow(self.keys, queues)))

    def counts(self, queues: Iterable[str]) -> dict[str, dict[str, int]]:
        day = utc_day(self.clock.now())
        return cast(dict[str, dict[str, int]], self.broker.drive("events.counts", counts_flow(self.keys, queues, day)))

    def close(self) -> None:
        if self._owned:
            self.broker.close()


class AsyncEventStreams(_Streams[AsyncBroker]):
    """The same reads as ``EventStreams`` on an ``AsyncBroker``, for the console's reader on the ASGI event loop."""

    def _broker(self, redis_url: str, prefix: str) -> AsyncBroker:
        return AsyncBroker(redis_url, prefix=prefix)

    async def read(self, tail: EventTail, block_ms: int = 1000) -> list[StreamEvent]:
        return cast(list[StreamEvent], await self.broker.drive("events.read", tail.read_flow(block_ms)))

    async def replay(self, queue: str, after: str, limit: int = 10_000, task_id: str | None = None) -> Replay:
        flow = replay_flow(self.keys, queue, after, limit, task_id)
        return cast(Replay, await self.broker.drive("events.replay", flow))

    async def cursor(self, queues: Iterable[str]) -> dict[str, str]:
        return cast(dict[str, str], await self.broker.drive("events.cursor", cursor_flow(self.keys, queues)))

    async def counts(self, queues: Iterable[str]) -> dict[str, dict[str, int]]:
        day = utc_day(self.clock.now())
        flow = counts_flow(self.keys, queues, day)
        return cast(dict[str, dict[str, int]], await self.broker.drive("events.counts", flow))

    async def queues(self) -> list[str]:
        return cast(list[str], await self.broker.drive("events.queues", _queues_flow(self.keys)))

    async def close(self) -> None:
        if self._owned:
            await self.broker.close()


def _queues_flow(keys: Keys) -> Flow:
    names = yield Command("smembers", (keys.queues,))
    return sorted(n.decode() for n in names)
