"""The read and operator API over Redis: queues, tasks, servers, and every operator action.

Reads use O(1) commands or ranges (LRANGE/ZRANGE pages, counts, a sample for memory), never full scans, so
they stay fast on queues of millions. Every action is one transition script, or a loop of chunked ones, and is
refused with LayoutVersionError, changing nothing, on a keyspace at another key layout (see ``layout``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from functools import partial
from typing import Any, Unpack

import redis

from . import search, series
from . import validation as check
from .broker import Broker, BrokerOptions, BrokerOwner
from .clock import from_ms, to_ms, utc_day
from .connection import DEFAULT_REDIS_URL, database_of, is_cluster
from .error_groups import ErrorGroup
from .error_groups import read_flow as read_error_groups
from .errors import (
    FailedPreconditionError,
    QueueNotEmptyError,
    QueueNotFoundError,
    RedisCommandError,
    ServerNotFoundError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from .export_store import ExportStatus, ExportStore
from .keys import STATES, cancel_message
from .message import TaskInfo, TaskMessage
from .policies import PolicyCache, QueueSpec
from .records import picked
from .redaction import Redaction
from .sans_io import drive, run_command
from .server_records import (
    CONTROL_TTL,
    SERVER_ACTIONS,
    SERVER_FIELD,
    Acknowledgement,
    ServerRecord,
    acked,
    held_tasks,
)
from .transitions import ArchiveLimits, Placement
from .workflows import WorkflowInfo

#: The key ``redis_info`` sets, with the server's reply, when INFO is refused.
INFO_REFUSED = "info_refused"
SCAN_LIMIT = 10_000  # tasks a filter looks at, at most, per request: it says how many it looked at
EVENT_SCAN_LIMIT = 20_000  # stream entries searched, at most, for one task's history
#: Seconds since the HTTP API last consumed from a queue for which it still counts as served (``serving``).
API_SERVED_WINDOW = 300.0
_SORTED_SET_STATES = ("active", "scheduled", "retry", "archived", "completed")
_MEMORY_STATES = ("pending",) + _SORTED_SET_STATES + ("waiting",)
#: Groups of a queue whose aggregating tasks are sampled for its memory (the first ones SSCAN returns: the same
#: ones while the groups stay, so an idle queue's memory reads the same on every load).
MEMORY_GROUPS = 4
MEMORY_SAMPLE = 20  # tasks per state whose MEMORY USAGE is read and extrapolated, as asynq does
MAX_PAGE_SIZE = 1000
#: Dependencies checked per waiting task of a list (a task may wait for up to 1000); its own page checks all.
WAITING_ON_LISTED = 20
#: Seconds an inspector trusts its last key layout check before an action: a console that runs while
#: ``migrate-keys`` moves the keyspace on stops acting within that time.
LAYOUT_RECHECK = 1.0
#: The states each bulk action takes (active tasks are cancelled, not deleted, run or archived; waiting tasks are
#: deleted or run one by one: delete_task, run_task).
DELETABLE = frozenset({"pending", "scheduled", "retry", "archived", "completed"})
RUNNABLE = frozenset({"scheduled", "retry", "archived"})
ARCHIVABLE = frozenset({"pending", "scheduled", "retry"})
#: A filter of ``search_tasks`` on a task's raw type, payload and last error (``_matches`` with its terms bound).
_Match = Callable[[bytes, bytes | None, bytes | None], bool]


@dataclass
class QueueInfo:
    queue: str
    pending: int = 0
    active: int = 0
    scheduled: int = 0
    retry: int = 0
    archived: int = 0
    completed: int = 0
    aggregating: int = 0
    waiting: int = 0  # tasks waiting for their dependencies (not one of asynq's states; see workflows.py)
    paused: bool = False
    latency: float = 0.0  # seconds the oldest pending task has waited
    memory_bytes: int = 0  # approximate
    processed_today: int = 0
    failed_today: int = 0
    processed_total: int = 0
    failed_total: int = 0

    @property
    def size(self) -> int:
        """Tasks in the queue, completed ones excluded (as asynq counts it)."""
        return (
            self.pending + self.active + self.scheduled + self.retry + self.archived + self.aggregating + self.waiting
        )

    def counts(self) -> dict[str, int]:
        return {state: getattr(self, state) for state in STATES}

    def live_counts(self) -> dict[str, int]:
        """What the live console sends per queue on every update: each state's size (waiting too), ``size``,
        ``paused`` (0/1) and the four counters, computed as the pages compute them on a fresh load."""
        return {
            **self.counts(),
            "size": self.size,
            "paused": int(self.paused),
            **picked(self, "processed_today failed_today processed_total failed_total"),
        }


@dataclass
class SearchPage:
    """One page of a search's matches, and what the search did: ``matches`` are all it found (for actions on
    every match), among ``scanned`` tasks read of the ``total`` the searched queues and states hold."""

    tasks: list[TaskInfo]
    matches: list[TaskInfo]
    scanned: int
    total: int
    page: int
    size: int
    query: Any = None  # the search.Query

    @property
    def complete(self) -> bool:
        """Whether every task of the searched queues and states was read (no bound stopped the search)."""
        return self.scanned >= self.total

    @property
    def pages(self) -> int:
        return page_count(len(self.matches), self.size)


@dataclass
class DailyStats:
    date: str
    processed: int
    failed: int


@dataclass
class SearchResult:
    """Tasks of one state matching a filter, found by a bounded scan: ``scanned`` of ``total`` were read.
    ``match_ids`` are every match the scan found, in list order (what an action on every match acts on);
    ``tasks`` the page ``page`` of them, ``size`` a page."""

    tasks: list[TaskInfo]
    scanned: int
    total: int
    match_ids: list[str] = field(default_factory=list)
    page: int = 1
    size: int = 100

    @property
    def complete(self) -> bool:
        return self.scanned >= self.total

    @property
    def pages(self) -> int:
        return page_count(len(self.match_ids), self.size)


@dataclass
class TaskEvent:
    """One transition of a task, from its queue's event stream."""

    id: str
    type: str
    from_state: str
    to_state: str
    at: datetime | None
    worker: str
    error: str
    lease: str = ""  # the attempt's lease token, on the event of a start
    stream_id: str = ""  # where it is in the queue's event stream (or was, once exported)
    started: datetime | None = None  # on the event of an attempt's end: when its handler started


@dataclass
class ServerInfo:
    id: str
    host: str
    pid: int
    started_at: datetime | None
    status: str
    queues: dict[str, int]
    strict: bool
    concurrency: int
    active: list[dict[str, Any]] = field(default_factory=list)
    heartbeat_at: datetime | None = None  # when its last heartbeat was written (None from older workers)
    pool: str = "thread"
    prefetch: int = 0
    processed: int = 0  # attempts it finished since it started (failures included, as asynq counts)
    failed: int = 0
    process_index: int | None = None  # its place under a ``--processes`` supervisor
    patterns: list[str] = field(default_factory=list)  # the glob patterns of its ``--queues`` (``tenant-*``)

    def reads(self, queue: str) -> bool:
        """Whether this server fetches from ``queue``: it is active (not quiet nor stopping) and serves the queue by
        name, or by a pattern that matches it (a worker resolves its patterns every round, so a queue created a
        moment ago may not be among its queues yet)."""
        if self.status != "active":
            return False
        return queue in self.queues or any(fnmatchcase(queue, pattern) for pattern in self.patterns)


class Inspector(BrokerOwner):
    """``Inspector(redis_url)``; ``actor`` is recorded in the event of every action it takes. Before an action it
    checks the keyspace's key layout (again after ``layout_recheck`` seconds)."""

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        actor: str = "operator",
        layout_recheck: float = LAYOUT_RECHECK,
        payload_limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
        **options: Unpack[BrokerOptions],
    ):
        self.broker = Broker(redis_url, **options)
        self.payload_limits = payload_limits  # what an edited payload may be, as for a producer
        self.keys = self.broker.keys
        self.ops = self.broker.transitions
        self.actor = actor
        self.policies = PolicyCache(self.keys)
        self.layout_recheck = layout_recheck
        self._layout_checked_at: float | None = None  # time.monotonic() of the last check that passed

    @property
    def conn(self) -> redis.Redis:
        return self.broker.conn

    def _redis(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return self.broker.command(f"inspector.{op}", fn, *args, **kwargs)

    # -- queues ------------------------------------------------------------------------------------------------

    def queues(self) -> list[str]:
        """Every queue's name, sorted.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return sorted(name.decode() for name in self._redis("queues", self.conn.smembers, self.keys.queues))

    def _known(self, queue: str, op: str) -> str:
        check.queue_name(queue, f"inspector.{op}")
        if not self._redis(op, self.conn.sismember, self.keys.queues, queue):
            raise QueueNotFoundError(f"no queue named {queue!r}", op=f"inspector.{op}")
        return queue

    def _acting_on(self, queue: str, op: str) -> str:
        """The queue of an action: our key layout first (in another one, even whether the queue exists may be
        misread), then the queue must exist."""
        self._check_layout(op)
        return self._known(queue, op)

    def _check_layout(self, op: str) -> None:
        """Raise LayoutVersionError before an action on a keyspace at another key layout. Reads only: unlike a
        client's first write, an operator's action does not stamp an unstamped keyspace."""
        now = time.monotonic()
        if self._layout_checked_at is not None and now - self._layout_checked_at < self.layout_recheck:
            return
        self.broker.check_layout(f"inspector.{op}", stamp=False)
        self._layout_checked_at = now

    def export_status(self) -> ExportStatus:
        """The event exporter: who holds its lease, per queue the committed offset against the stream, gaps.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return ExportStore(self.broker).status()

    def queue_info(self, queue: str) -> QueueInfo:
        """The queue's sizes per state, today's and all-time counts, latency and memory.

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "queue_info")
        return self.queue_infos([queue])[0]

    def queue_infos(self, queues: list[str], memory_sample: int = MEMORY_SAMPLE) -> list[QueueInfo]:
        """The QueueInfo of many queues in three round trips, however many queues (for the dashboard and
        /metrics). Names are not checked against the queue set: an unknown queue reads as empty.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        day = utc_day(self.broker.clock.now())
        pipe = self.conn.pipeline(transaction=False)
        for queue in queues:
            q = self.keys.queue(queue)
            pipe.llen(q.pending)
            for state in _SORTED_SET_STATES:
                pipe.zcard(q.state_key(state))
            pipe.exists(q.paused)
            for counter in (q.processed_on(day), q.failed_on(day), q.processed, q.failed):
                pipe.get(counter)  # not MGET: a cluster pipeline refuses multi-key commands
            pipe.lindex(q.pending, -1)
            pipe.hgetall(q.type_counts)  # aggregating and waiting tasks are counted per type by the scripts
        replies = iter(self._redis("queue_info", pipe.execute)) if queues else iter(())
        infos, oldest = [], []
        for queue in queues:
            sizes = [next(replies) for _ in range(7)]
            info = QueueInfo(
                queue,
                pending=sizes[0],
                active=sizes[1],
                scheduled=sizes[2],
                retry=sizes[3],
                archived=sizes[4],
                completed=sizes[5],
                paused=bool(sizes[6]),
            )
            info.processed_today, info.failed_today, info.processed_total, info.failed_total = (
                int(next(replies) or 0) for _ in range(4)
            )
            infos.append(info)
            oldest.append(next(replies))
            count_unlisted(info, next(replies))
        self._latency_and_memory(infos, oldest, memory_sample)
        return infos

    def series(
        self, queue: str | None, range_name: str, most: int = 120, fields: list[str] | None = None
    ) -> list[series.Point]:
        """The time series of ``queue`` (None: every queue's totals) over one of ``series.RANGES``, oldest first,
        at most ``most`` points (consecutive minutes or hours added up); with ``fields``, only those fields.
        One pipelined round trip.

        Raises:
            ValidationError: the range is not one of ``series.RANGES``, or the queue name is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        if range_name not in series.RANGES:
            raise ValidationError(
                f"range must be one of {', '.join(series.RANGES)}, not {range_name!r}", op="inspector.series"
            )
        if queue is not None:
            check.queue_name(queue, "inspector.series")
        back, resolution = series.RANGES[range_name]
        now = self.broker.clock.now()
        points = drive(
            series.read_flow(self.keys, queue, resolution, now - back + series.STEP[resolution], now, fields),
            lambda request: self.broker.command("inspector.series", run_command, self.conn, request),
        )
        return series.downsample(points, most)

    def error_groups(self, queue: str, task_type: str | None = None, limit: int = 50) -> list[ErrorGroup]:
        """The queue's error groups (of ``task_type`` only, when given), the most recently seen first, at most
        ``limit``; each says whether its sample task still exists.

        Raises:
            ValidationError: the queue name or task type is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.queue_name(queue, "inspector.error_groups")
        if task_type is not None:
            check.task_type(task_type, "inspector.error_groups")
        groups: list[ErrorGroup] = drive(
            read_error_groups(self.keys, queue, task_type, limit),
            lambda request: self.broker.command("inspector.error_groups", run_command, self.conn, request),
        )
        existing = self.existing_tasks((queue, group.sample) for group in groups)
        for group in groups:
            group.sample_exists = (queue, group.sample) in existing
        return groups

    def outstanding(self, queue: str) -> int:
        """Tasks of ``queue`` a worker has yet to take or finish: pending, active, and scheduled or retry tasks
        already due by this inspector's clock. One MULTI reads all four, so a task moving between them is never
        missed (``worker.testing.run_until_empty`` relies on it); the queue's keys share one hash tag.

        Raises:
            ValidationError: the queue name is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        q = self.keys.queue(check.queue_name(queue, "inspector.outstanding"))
        now_ms = to_ms(self.broker.clock.now())
        pipe = self.conn.pipeline(transaction=True)
        pipe.llen(q.pending)
        pipe.zcard(q.lease)
        pipe.zcount(q.scheduled, "-inf", now_ms)
        pipe.zcount(q.retry, "-inf", now_ms)
        return sum(self._redis("outstanding", pipe.execute))

    def _latency_and_memory(self, infos: list[QueueInfo], oldest: list[bytes | None], memory_sample: int) -> None:
        """Latency is the age of the oldest pending task. Memory is approximate: the structures' own usage plus
        a per-state sample of task hashes, extrapolated (as asynq does)."""
        pipe = self.conn.pipeline(transaction=False)
        plan = [self._memory_reads(pipe, info, head, memory_sample) for info, head in zip(infos, oldest, strict=True)]
        replies = iter(self._redis("queue_info", pipe.execute)) if infos else iter(())
        now = self.broker.clock.now()
        samples = self.conn.pipeline(transaction=False)
        scale: list[tuple[QueueInfo, int, int]] = []
        groups: list[tuple[QueueInfo, int, list[bytes]]] = []
        for info, states, head in zip(infos, plan, oldest, strict=True):
            since = next(replies) if head is not None else None
            if since:
                info.latency = max(0.0, now - int(since) / 1000)
            for _state, count in states:
                info.memory_bytes += next(replies) or 0
                ids = next(replies)
                for task_id in ids:
                    samples.memory_usage(self.keys.queue(info.queue).task(task_id.decode()), samples=0)
                scale.append((info, len(ids), count))
            if info.aggregating:
                groups.append((info, next(replies), next(replies)[1][:MEMORY_GROUPS]))
        scale += self._aggregating_memory(groups, samples, memory_sample)
        usages = iter(self._redis("queue_info", samples.execute)) if scale else iter(())
        for info, sampled, count in scale:
            chunk = [next(usages) or 0 for _ in range(sampled)]
            if chunk:
                info.memory_bytes += int(sum(chunk) / len(chunk) * count)

    def _memory_reads(
        self, pipe: Any, info: QueueInfo, head: bytes | None, memory_sample: int
    ) -> list[tuple[str, int]]:
        """Queue on ``pipe`` what ``_latency_and_memory`` reads of one queue: the oldest pending task's time, each
        state's structure and first tasks, and the groups of its aggregating tasks. Returns the states read."""
        q = self.keys.queue(info.queue)
        if head is not None:
            pipe.hget(q.task(head.decode()), "since")
        states = [(state, getattr(info, state)) for state in _MEMORY_STATES if getattr(info, state)]
        for state, _count in states:
            key = q.state_key(state)
            pipe.memory_usage(key, samples=memory_sample)
            if state == "pending":
                pipe.lrange(key, 0, memory_sample - 1)
            else:
                pipe.zrange(key, 0, memory_sample - 1)
        if info.aggregating:
            pipe.scard(q.groups)
            pipe.sscan(q.groups, 0, count=MEMORY_GROUPS)
        return states

    def _aggregating_memory(
        self, groups: list[tuple[QueueInfo, int, list[bytes]]], samples: Any, memory_sample: int
    ) -> list[tuple[QueueInfo, int, int]]:
        """Aggregating tasks sit in one sorted set per group (issue 23: Memory read "0 bytes" beside 7 of them).
        The sampled groups' sets, extrapolated to all groups, count here; their first tasks are added to
        ``samples`` to be extrapolated to every aggregating task, as ``_latency_and_memory`` does per state."""
        sampled = [(info, total, names) for info, total, names in groups if names]
        if not sampled:
            return []
        pipe = self.conn.pipeline(transaction=False)
        for info, _total, names in sampled:
            q = self.keys.queue(info.queue)
            for name in names:
                pipe.memory_usage(q.group(name.decode()), samples=memory_sample)
                pipe.zrange(q.group(name.decode()), 0, memory_sample - 1)
        replies = iter(self._redis("queue_info", pipe.execute))
        scale = []
        for info, total, names in sampled:
            sizes, ids = [], []
            for _name in names:
                sizes.append(next(replies) or 0)
                ids += next(replies)
            info.memory_bytes += int(sum(sizes) / len(sizes) * total)
            ids = ids[: max(1, memory_sample)]
            for task_id in ids:
                samples.memory_usage(self.keys.queue(info.queue).task(task_id.decode()), samples=0)
            scale.append((info, len(ids), info.aggregating))
        return scale

    def history(self, queue: str, days: int = 7) -> list[DailyStats]:
        """Processed and failed counts per UTC day, newest first.

        Raises:
            ValidationError: the queue name is malformed, or ``days`` is outside 1-90.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        found = self.histories([queue], days)
        if queue not in found:
            raise QueueNotFoundError(f"no queue named {queue!r}", op="inspector.history")
        return found[queue]

    def histories(self, queues: list[str], days: int = 7) -> dict[str, list[DailyStats]]:
        """``history`` of many queues in one round trip, by queue; a queue not in the queue set (deleted since it
        was listed) is left out. The dashboard reads 200 queues' days this way: one round trip per queue was a
        third of its time (docs/benchmarks.md, "Console at scale").

        Raises:
            ValidationError: a queue name is malformed, or ``days`` is outside 1-90.
            RedisUnavailableError: Redis cannot be reached.
        """
        days = check.count(days, "days", 1, 90, "inspector.history")
        for queue in queues:
            check.queue_name(queue, "inspector.history")
        if not queues:
            return {}
        today = datetime.fromtimestamp(self.broker.clock.now(), tz=UTC)
        dates = [(today - timedelta(days=n)).strftime("%Y-%m-%d") for n in range(days)]
        cluster = is_cluster(self.conn)
        pipe = self.conn.pipeline(transaction=False)
        pipe.smismember(self.keys.queues, queues)
        for queue in queues:
            q = self.keys.queue(queue)
            keys = [k for d in dates for k in (q.processed_on(d), q.failed_on(d))]
            if cluster:  # a cluster pipeline refuses MGET, even of keys in one slot
                for key in keys:
                    pipe.get(key)
            else:
                pipe.mget(keys)
        replies = iter(self._redis("history", pipe.execute))
        known = next(replies)
        found = {}
        for queue, exists in zip(queues, known, strict=True):
            values = [next(replies) for _ in range(2 * days)] if cluster else next(replies)
            if exists:
                found[queue] = [
                    DailyStats(d, int(values[2 * i] or 0), int(values[2 * i + 1] or 0)) for i, d in enumerate(dates)
                ]
        return found

    def type_counts(self, queue: str) -> dict[str, dict[str, int]]:
        """Per task type: how many are in each state, plus processed and failed totals (kept by the scripts).

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "type_counts")
        return self.type_counts_of([queue])[queue]

    def type_counts_of(self, queues: list[str], keep_zero: bool = False) -> dict[str, dict[str, dict[str, int]]]:
        """type_counts of many queues in one round trip (unknown queues read as empty). With ``keep_zero`` a count
        that went back to 0 is kept: a state the type has been in (metrics keep its series alive).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        pipe = self.conn.pipeline(transaction=False)
        for queue in queues:
            pipe.hgetall(self.keys.queue(queue).type_counts)
        replies = self._redis("type_counts", pipe.execute) if queues else []
        result: dict[str, dict[str, dict[str, int]]] = {}
        for queue, raw in zip(queues, replies, strict=True):
            out: dict[str, dict[str, int]] = {}
            for name, value in raw.items():
                state, _, task_type = name.decode().partition(":")
                if int(value) or keep_zero:
                    out.setdefault(task_type, {})[state] = int(value)
            result[queue] = out
        return result

    def pause_queue(self, queue: str) -> None:
        """Stop workers taking the queue's tasks (tasks already running finish).

        Raises:
            ValidationError: the queue name is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.broker.run(self.ops.pause(self._acting_on(queue, "pause"), self.actor, paused=True))

    def unpause_queue(self, queue: str) -> None:
        """Let workers take the queue's tasks again.

        Raises:
            ValidationError: the queue name is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.broker.run(self.ops.pause(self._acting_on(queue, "unpause"), self.actor, paused=False))

    def delete_queue(self, queue: str, force: bool = False) -> None:
        """Refused while tasks are active, or while any task is left unless ``force``.

        Raises:
            ValidationError: the queue name is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            QueueNotEmptyError: tasks are active, or (without ``force``) any task is left.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._acting_on(queue, "delete_queue")
        if force:
            info = self.queue_info(queue)
            if info.active:
                raise QueueNotEmptyError(f"{info.active} tasks are active", op="inspector.delete_queue")
            for state in DELETABLE:
                self._bulk("delete_all", queue, state, DELETABLE)
        self.broker.run(self.ops.delete_queue(queue, force))
        self._redis("delete_queue", self.conn.srem, self.keys.queues, queue)

    # -- tasks -------------------------------------------------------------------------------------------------

    def list_tasks(
        self, queue: str, state: str, page: int = 1, size: int = 20, group: str | None = None
    ) -> list[TaskInfo]:
        """One page of a state, newest first for archived and completed, next-to-run first for pending,
        scheduled and retry, soonest lease expiry first for active. Aggregating tasks are listed group by group
        (oldest first), or of one ``group``; waiting tasks (see ``workflows``) oldest first.

        Raises:
            ValidationError: the queue name or group is malformed, the state unknown, or ``page``/``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "list_tasks")
        op = "inspector.list_tasks"
        if state not in STATES:
            raise ValidationError(f"unknown state {state!r}; one of {', '.join(STATES)}", op=op)
        page = check.count(page, "page", 1, 10**9, op)
        size = check.count(size, "size", 1, MAX_PAGE_SIZE, op)
        start, stop = (page - 1) * size, page * size - 1
        if state == "aggregating":
            return self._list_aggregating(queue, group, start, stop)
        ids = self._id_range(queue, state, start, stop)
        return self._hydrate(queue, ids)

    def list_tasks_after(
        self, queue: str, state: str, size: int, after: tuple[float, str] | None = None
    ) -> tuple[list[TaskInfo], tuple[float, str] | None]:
        """A page of archived or completed tasks, newest first, from the one after ``after`` (the mark a page
        before returned), and the mark of this page's last task when more follow (None at the end). Unlike a page
        number, a mark does not skip or repeat tasks when newer ones arrive between two pages.

        Raises:
            ValidationError: the queue name or state is malformed, or ``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "list_tasks_after")
        op = "inspector.list_tasks_after"
        if state not in ("archived", "completed"):
            raise ValidationError(f"state {state!r} is not archived or completed", op=op)
        size = check.count(size, "size", 1, MAX_PAGE_SIZE, op)
        key = self.keys.queue(queue).state_key(state)
        start = 0
        if after is not None:
            score, task_id = after
            pipe = self.conn.pipeline(transaction=False)
            pipe.zscore(key, task_id)
            pipe.zrevrank(key, task_id)
            pipe.zcount(key, f"({score!r}", "+inf")
            held, rank, newer = self._redis("list_tasks_after", pipe.execute)
            # The marked task still there, where it was: right after it. Gone (respawned, deleted) or moved: after
            # every task newer than it was, which may repeat one archived in the same millisecond.
            start = rank + 1 if held == score and rank is not None else newer
        ids = list(self._redis("list_tasks_after", self.conn.zrevrange, key, start, start + size, withscores=True))
        more = len(ids) > size
        ids = ids[:size]
        mark = (float(ids[-1][1]), ids[-1][0].decode()) if more and ids else None
        return self._hydrate(queue, ids), mark

    def _hydrate(self, queue: str, ids: list[tuple[bytes, float | None]]) -> list[TaskInfo]:
        """Read and decode the tasks of ``ids`` (with their scores) in one round trip."""
        q = self.keys.queue(queue)
        pipe = self.conn.pipeline(transaction=False)
        for task_id, _score in ids:
            pipe.hgetall(q.task(task_id.decode()))
        hashes = self._redis("list_tasks", pipe.execute) if ids else []
        tasks = [
            self._flag_orphan(TaskInfo.from_hash(task_id.decode(), queue, fields, score))
            for (task_id, score), fields in zip(ids, hashes, strict=True)
            if fields
        ]
        return self._with_waiting_on(queue, tasks, WAITING_ON_LISTED)

    def _with_waiting_on(self, queue: str, tasks: list[TaskInfo], most: int) -> list[TaskInfo]:
        """Fill ``waiting_on`` of the waiting tasks, checking up to ``most`` dependencies of each: a dependency is
        still awaited while the task is in its dependency set (the script of its success removes the set)."""
        q = self.keys.queue(queue)
        checks = [(task, dep) for task in tasks if task.state == "waiting" for dep in task.after[:most]]
        if not checks:
            return tasks
        awaited_by = self._each("list_tasks", "sismember", [(q.dependents(dep), task.id) for task, dep in checks])
        for (task, dep), awaited in zip(checks, awaited_by, strict=True):
            if awaited:
                task.waiting_on.append(dep)
        return tasks

    def _match_decoded(self, queue: str, state: str, match: _Match, budget: int) -> tuple[list[TaskInfo], int]:
        """The matches among the first ``budget`` tasks of a state read decoded, page by page, and how many were
        read (for aggregating tasks, which have no single range to walk)."""
        found: list[TaskInfo] = []
        scanned, page = 0, 1
        while scanned < budget:
            batch = self.list_tasks(queue, state, page=page, size=min(MAX_PAGE_SIZE, budget - scanned))
            if not batch:
                break
            scanned += len(batch)
            page += 1
            found += [t for t in batch if match(t.type.encode(), t.payload, (t.last_error or "").encode())]
        return found, scanned

    def _id_range(self, queue: str, state: str, start: int, stop: int) -> list[tuple[bytes, float | None]]:
        """Ids (with scores) of positions start..stop of a state, in the order list_tasks shows them."""
        key = self.keys.queue(queue).state_key(state)
        if state == "pending":
            # LPUSH in, RPOP out: the next to run is at the tail.
            ids: list[bytes] = self._redis("list_tasks", self.conn.lrange, key, -stop - 1, -start - 1)
            return [(task_id, None) for task_id in reversed(ids)]
        if state in ("archived", "completed"):
            return list(self._redis("list_tasks", self.conn.zrevrange, key, start, stop, withscores=True))
        return list(self._redis("list_tasks", self.conn.zrange, key, start, stop, withscores=True))

    # -- groups and workflows ------------------------------------------------------------------------------------

    def groups(self, queue: str) -> list[GroupInfo]:
        """The queue's groups of aggregating tasks with their sizes, by name (asynq's ``group ls``). Tasks an
        aggregator has cut from a group and not yet combined are counted in ``aggregating`` of the queue only.

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "groups")
        q = self.keys.queue(queue)
        names = sorted(n.decode() for n in self._redis("groups", self.conn.smembers, q.groups))
        pipe = self.conn.pipeline(transaction=False)
        for name in names:
            pipe.zcard(q.group(name))
            pipe.zrange(q.group(name), 0, 0, withscores=True)
        replies = self._redis("groups", pipe.execute) if names else []
        out = []
        for index, name in enumerate(names):
            size, oldest = replies[2 * index], replies[2 * index + 1]
            if size:
                out.append(GroupInfo(name, size, from_ms(int(oldest[0][1])) if oldest else None))
        return out

    def _list_aggregating(self, queue: str, group: str | None, start: int, stop: int) -> list[TaskInfo]:
        q = self.keys.queue(queue)
        if group is not None:
            names = [check.task_type(group, "inspector.list_tasks")]
        else:
            names = [g.name for g in self.groups(queue)]
        ids: list[str] = []
        for name in names:  # page through the groups in name order, each oldest first
            size = int(self._redis("list_tasks", self.conn.zcard, q.group(name)))
            if start >= size:
                start, stop = start - size, stop - size
                continue
            ids += [i.decode() for i in self._redis("list_tasks", self.conn.zrange, q.group(name), start, stop)]
            if stop < size:
                break
            start, stop = 0, stop - size
        pipe = self.conn.pipeline(transaction=False)
        for task_id in ids:
            pipe.hgetall(q.task(task_id))
        hashes = self._redis("list_tasks", pipe.execute) if ids else []
        return [
            TaskInfo.from_hash(task_id, queue, fields) for task_id, fields in zip(ids, hashes, strict=True) if fields
        ]

    def workflow(self, queue: str, workflow_id: str) -> WorkflowInfo:
        """A workflow: its state, and each member's role, dependencies, state (or how it ended) and result.

        Raises:
            ValidationError: the queue name or workflow id is malformed.
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no workflow with that id.
            RedisUnavailableError: Redis cannot be reached.
        """
        from .sans_io import drive, run_command
        from .workflows import read_flow

        self._known(queue, "workflow")
        check.task_id(workflow_id, "inspector.workflow")
        info = self._redis(
            "workflow", drive, read_flow(self.keys, queue, workflow_id), lambda request: run_command(self.conn, request)
        )
        if not isinstance(info, WorkflowInfo):
            raise TaskNotFoundError(
                f"no workflow {workflow_id!r} in queue {queue!r} (a finished workflow is kept for its keep time)",
                op="inspector.workflow",
            )
        return info

    def workflows(self, queue: str, page: int = 1, size: int = 20) -> list[tuple[str, datetime | None]]:
        """Ids of the queue's workflows, newest first, with their creation time.

        Raises:
            ValidationError: the queue name is malformed, or ``page``/``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "workflows")
        page = check.count(page, "page", 1, 10**9, "inspector.workflows")
        size = check.count(size, "size", 1, MAX_PAGE_SIZE, "inspector.workflows")
        rows = self._redis(
            "workflows",
            self.conn.zrevrange,
            self.keys.queue(queue).workflows,
            (page - 1) * size,
            page * size - 1,
            withscores=True,
        )
        return [(wf.decode(), from_ms(int(score))) for wf, score in rows]

    def workflow_summaries(self, queue: str, workflow_ids: list[str]) -> dict[str, WorkflowInfo]:
        """The workflows of ``workflow_ids`` still kept (an expired one is left out), for a list: state, progress,
        where each failed or stalls, in two round trips for all of them. Members carry no results, and only
        those that have not ended are read (at most ``workflows.LISTED_MEMBERS`` per workflow).

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        from .workflows import read_many_flow

        self._known(queue, "workflow_summaries")
        flow = read_many_flow(self.keys, queue, list(workflow_ids))
        return dict(self._redis("workflow_summaries", drive, flow, lambda request: run_command(self.conn, request)))

    def retry_workflow(self, queue: str, workflow_id: str) -> int:
        """Run a failed workflow again from where it failed: its failed members become pending, the members its
        failure cancelled wait again (or run, when what they wait for has succeeded since), and it is running
        again (``lua/workflow_retry.lua``). Its on_error callback is not run again. Returns how many members
        moved.

        Raises:
            ValidationError: the queue name or workflow id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no workflow with that id (or its record expired).
            FailedPreconditionError: the workflow has not failed, or a failed or cancelled member is no longer
                archived (deleted, run on its own, or trimmed from the archive).
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._workflow_action("workflow_retry", queue, workflow_id)

    def cancel_workflow(self, queue: str, workflow_id: str) -> int:
        """Stop a workflow: every member that has not started is archived as "cancelled by <actor>"; running
        members finish on their own; a waiting on_error callback is dropped. A running workflow ends
        ``cancelled``; a failed one stays failed (``lua/workflow_cancel.lua``). Returns how many members it
        cancelled.

        Raises:
            ValidationError: the queue name or workflow id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no workflow with that id (or its record expired).
            FailedPreconditionError: it succeeded or was cancelled, or it failed with nothing left to run.
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._workflow_action("workflow_cancel", queue, workflow_id)

    def archive_workflow(self, queue: str, workflow_id: str) -> int:
        """Give up on a running workflow's steps that have not started (pending, scheduled, retry): each is
        archived as "archived by <actor>", so the workflow fails as on any failure (waiting members cancelled,
        on_error released) (``lua/workflow_archive.lua``). Returns how many members it archived.

        Raises:
            ValidationError: the queue name or workflow id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no workflow with that id (or its record expired).
            FailedPreconditionError: the workflow is not running, or none of its members is pending, scheduled
                or retry.
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._workflow_action("workflow_archive", queue, workflow_id)

    def _workflow_action(self, name: str, queue: str, workflow_id: str) -> int:
        from .workflows import action_call

        self._acting_on(queue, name)
        check.task_id(workflow_id, f"inspector.{name}")
        return int(self.broker.run(action_call(self.ops, name, queue, workflow_id, self.actor)))

    def _flag_orphan(self, info: TaskInfo) -> TaskInfo:
        if info.lease_expires_at is not None:
            info.orphaned = info.lease_expires_at.timestamp() < self.broker.clock.now()
        return info

    def search_tasks(
        self,
        queue: str,
        state: str,
        *,
        task_type: str | None = None,
        text: str | None = None,
        page: int = 1,
        limit: int = 100,
        scan_limit: int = SCAN_LIMIT,
        redaction: Redaction | None = None,
    ) -> SearchResult:
        """Tasks of ``state`` whose type starts with ``task_type`` and whose payload or last error contains
        ``text``, in list order: the ids of every match among the first ``scan_limit`` tasks (read in pages, so it
        stays fast on huge queues; it says how many it read), and page ``page`` of them decoded, ``limit`` a page
        (a page past the last is the last). With ``redaction``, ``text`` must be in the payload as redacted: a
        search must not reveal what a masked value holds.

        Raises:
            ValidationError: the queue name, state, page or a limit is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        op = "inspector.search_tasks"
        self._known(queue, "search_tasks")
        page = check.count(page, "page", 1, 10**9, op)
        limit = check.count(limit, "limit", 1, MAX_PAGE_SIZE, op)
        scan_limit = check.count(scan_limit, "scan_limit", 1, 1_000_000, op)
        needle = text.encode() if text else None
        prefix = task_type.encode() if task_type else None
        match = partial(_matches, prefix=prefix, needle=needle, redaction=redaction)
        total = self.queue_info(queue).counts().get(state, 0)
        budget = min(total, scan_limit)
        if state == "aggregating":
            decoded, scanned = self._match_decoded(queue, state, match, budget)
            ids = [t.id for t in decoded]
            page = min(page, page_count(len(ids), limit))
            tasks = decoded[(page - 1) * limit : page * limit]
        else:
            matches, scanned = self._match_raw(queue, state, match, budget)
            ids = [task_id.decode() for task_id, _ in matches]
            page = min(page, page_count(len(ids), limit))
            tasks = self._hydrate(queue, matches[(page - 1) * limit : page * limit])
        return SearchResult(tasks, scanned, total, ids, page, limit)

    def _match_raw(
        self, queue: str, state: str, match: _Match, budget: int
    ) -> tuple[list[tuple[bytes, float | None]], int]:
        """The ids (with scores) of the matches among the first ``budget`` tasks of a state, and how many were
        read. Matches on the raw fields: decoding ten thousand tasks to keep three is what made this slow."""
        q = self.keys.queue(queue)
        matches: list[tuple[bytes, float | None]] = []
        scanned = 0
        while scanned < budget:
            ids = self._id_range(queue, state, scanned, scanned + min(MAX_PAGE_SIZE, budget - scanned) - 1)
            if not ids:
                break
            scanned += len(ids)
            pipe = self.conn.pipeline(transaction=False)
            for task_id, _score in ids:
                pipe.hmget(q.task(task_id.decode()), "type", "payload", "error")
            rows = self._redis("search_tasks", pipe.execute)
            matches += [
                (task_id, score)
                for (task_id, score), (ttype, payload, error) in zip(ids, rows, strict=True)
                if ttype is not None and match(ttype, payload, error)
            ]
        return matches, scanned

    def search(
        self,
        query: str | search.Query,
        *,
        page: int = 1,
        size: int = 20,
        scan_limit: int = SCAN_LIMIT,
        redaction: Redaction | None = None,
    ) -> SearchPage:
        """Tasks of every queue that match a search (``search`` has the language), newest first (by creation),
        one page of them. Reads at most ``scan_limit`` tasks in all (1,000 per round trip) and says how many it
        read of how many the searched queues and states hold: a search that stopped at the bound says so.
        Aggregating tasks are not searched (they are in their groups: see ``groups``). With ``redaction``, payloads
        are matched as masked: a search must not reveal what a masked value holds.

        Raises:
            QuerySyntaxError: the search cannot be read (nothing was searched).
            ValidationError: a page, size or limit is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        op = "inspector.search"
        wanted = search.parse(query) if isinstance(query, str) else query
        page = check.count(page, "page", 1, 10**9, op)
        size = check.count(size, "size", 1, MAX_PAGE_SIZE, op)
        scan_limit = check.count(scan_limit, "scan_limit", 1, 1_000_000, op)
        states = [s for s in (wanted.states or STATES) if s != "aggregating"]
        infos = self.queue_infos([q for q in self.queues() if wanted.queue_matches(q)], memory_sample=0)
        total = sum(info.counts().get(state, 0) for info in infos for state in states)
        now, found, scanned = self.broker.clock.now(), [], 0
        for info in infos:
            for state in states:
                start, count = 0, info.counts().get(state, 0)
                while start < count and scanned < scan_limit:
                    ids = self._id_range(info.queue, state, start, start + min(MAX_PAGE_SIZE, scan_limit - scanned) - 1)
                    if not ids:
                        break
                    start, scanned = start + len(ids), scanned + len(ids)
                    pipe = self.conn.pipeline(transaction=False)
                    for task_id, _score in ids:
                        pipe.hgetall(self.keys.queue(info.queue).task(task_id.decode()))
                    for (task_id, score), fields in zip(ids, self._redis("search", pipe.execute), strict=True):
                        if not fields:
                            continue  # gone between the two reads
                        task = TaskInfo.from_hash(task_id.decode(), info.queue, fields, score)
                        if redaction:
                            task = replace(task, payload=redaction.apply(task.type, task.payload) or b"")
                        if search.matches(wanted, task, now):
                            found.append(task)
        # Newest first: what an operator looks for is most often what just happened.
        found.sort(key=lambda t: (-(t.created_at.timestamp() if t.created_at else 0), t.queue, t.id))
        first = (page - 1) * size
        return SearchPage(found[first : first + size], found, scanned, total, page, size, wanted)

    def api_served_queues(self, within: float = API_SERVED_WINDOW) -> set[str]:
        """The queues the HTTP API's consume endpoint polled within the last ``within`` seconds: served, though
        no worker reads them. One HGETALL of a small hash.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        polled = self._redis("api_served_queues", self.conn.hgetall, self.keys.api_consumed)
        since = to_ms(self.broker.clock.now() - within)
        return {queue.decode() for queue, ms in polled.items() if ms.isdigit() and int(ms) >= since}

    def task_events(
        self, queue: str, task_id: str, scan_limit: int = EVENT_SCAN_LIMIT, *, window: tuple[int, int] | None = None
    ) -> list[TaskEvent]:
        """The task's transitions, oldest first, from the newest ``scan_limit`` entries of the queue's stream.

        The scan goes newest first and stops at the task's creation (the only kind of event with no ``from``
        state): nothing older is about this task, so a recent task costs a few hundred entries, not the limit.
        ``window`` (epoch ms, ``timeline.event_window`` of the task's creation and last move) bounds it further:
        when the stream's oldest entry is later than the window, the stream holds none of the task's events and
        nothing is scanned (an old task in a busy queue cost the whole limit, 20,000 entries, before); the scan
        also stops at the first entry timed before the window.
        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "task_events")
        check.task_id(task_id, "inspector.task_events")
        stream = self.keys.queue(queue).events
        if (
            window is not None
            and _entry_at(self._redis("task_events", self.conn.xrange, stream, count=1), 0) > window[1]
        ):
            return []
        earliest = window[0] if window is not None else 0
        wanted = task_id.encode()
        events: list[TaskEvent] = []
        last = "+"
        scanned = 0
        while scanned < scan_limit:
            entries = self._redis("task_events", self.conn.xrevrange, stream, last, "-", count=1000)
            if last != "+":
                entries = entries[1:]  # XREVRANGE includes the entry it starts from
            if not entries:
                break
            scanned += len(entries)
            last = entries[-1][0]
            for entry_id, fields in entries:
                if fields.get(b"id") == wanted:
                    events.append(_event(fields, entry_id.decode()))
                    if not fields.get(b"from"):
                        return events[::-1]
            if _entry_at(entries, -1) < earliest:
                break
        return events[::-1]

    def get_task(self, queue: str, task_id: str) -> TaskInfo:
        """One task, in whatever state it is.

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._known(queue, "get_task")
        check.task_id(task_id, "inspector.get_task")
        q = self.keys.queue(queue)
        fields = self._redis("get_task", self.conn.hgetall, q.task(task_id))
        if not fields:
            raise TaskNotFoundError(f"no task {task_id!r} in queue {queue!r}", op="inspector.get_task")
        state = fields.get(b"state", b"").decode()
        score = None
        if state in ("scheduled", "retry", "completed", "archived", "active"):
            score = self._redis("get_task", self.conn.zscore, q.state_key(state), task_id)
        task = self._flag_orphan(TaskInfo.from_hash(task_id, queue, fields, score))
        return self._with_waiting_on(queue, [task], len(task.after))[0]

    def existing_tasks(self, refs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the (queue, task id) pairs name a task that still exists, read in one pipeline: a page that
        links tasks which may be gone (deleted on success, past their retention) asks once, not per link. A pair
        the engine would refuse (a malformed name or id) names no task.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        wanted = [(queue, task_id) for queue, task_id in dict.fromkeys(refs) if _well_formed(queue, task_id)]
        found = self._each("existing_tasks", "exists", [(self.keys.queue(q).task(t),) for q, t in wanted])
        return {ref for ref, exists in zip(wanted, found, strict=True) if exists}

    def _each(self, op: str, command: str, args: list[tuple[Any, ...]]) -> list[Any]:
        """One ``command`` per item of ``args``, in one pipeline (no transaction): their replies, in order."""
        if not args:
            return []
        pipe = self.conn.pipeline(transaction=False)
        for arg in args:
            getattr(pipe, command)(*arg)
        return list(self._redis(op, pipe.execute))

    def delete_task(self, queue: str, task_id: str) -> None:
        """Delete a task that is not running. Tasks waiting for it (unless it had completed) are archived, as when
        it fails, and a workflow it belongs to fails (see ``workflows``).

        Raises:
            ValidationError: the queue name or task id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is active (a worker runs it): cancel it first.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._task_action("delete_task", queue, task_id)

    def run_task(self, queue: str, task_id: str) -> None:
        """Make a scheduled, retry, archived or waiting task pending now. A waiting task runs without waiting for
        its dependencies any longer (with the results of those that succeeded already, when it asked for them);
        the tasks waiting for it still wait for it to succeed.

        Raises:
            ValidationError: the queue name or task id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not scheduled, retry, archived or waiting, or it is the on_error
                callback of a workflow (it runs when the workflow fails).
            RedisUnavailableError: Redis cannot be reached.
        """
        self._task_action("run_task", queue, task_id)

    def edit_task(
        self,
        queue: str,
        task_id: str,
        payload: bytes,
        *,
        to_queue: str | None = None,
        max_retry: int | None = None,
        timeout: float | None = None,
        task_type: str | None = None,
    ) -> TaskInfo:
        """Edit a retry or archived task and run it: new ``payload`` (bytes, as stored), and where given a new
        ``max_retry``, ``timeout`` (seconds), queue or ``task_type`` (for a type no worker handles, e.g. misspelt).
        It becomes pending with its retry count at 0; its id and history stay, and its type unless given. In its
        own queue this is one transition (``lua/edit_task.lua``). Into another queue it is enqueued there under
        the same id, then deleted here (two steps: the queues live in different Cluster slots). Returns the task
        as it is now.

        Raises:
            ValidationError: a name, id or option is malformed, or the payload is over the size limit.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not retry or archived.
            TaskIdConflictError: the other queue already holds a task with that id (nothing changed).
            RedisUnavailableError: Redis cannot be reached.
        """
        op = "inspector.edit_task"
        self._acting_on(queue, "edit_task")
        check.task_id(task_id, op)
        data = check.payload(payload, op, self.payload_limits)
        # A move to another queue gives it a new task: the rules of enqueue. Staying put is no new queue.
        target = check.new_queue_name(to_queue, op) if to_queue and to_queue != queue else queue
        q = self.keys.queue(queue)
        fields = self._redis("edit_task", self.conn.hmget, q.task(task_id), "type", "msg", "state")
        if fields[0] is None:
            raise TaskNotFoundError(task_id, op=op)
        if fields[2] not in (b"retry", b"archived"):
            raise FailedPreconditionError(
                f"task is {(fields[2] or b'?').decode()}, only a retry or archived task can be edited", op=op
            )
        new_type = check.task_type(task_type, op) if task_type else ""
        message = replace(TaskMessage.decode(task_id, target, fields[0], data, fields[1] or b""), payload=data)
        if new_type:
            message = replace(message, type=new_type)
        if max_retry is not None:
            message.max_retry = check.count(max_retry, "max_retry", 0, check.MAX_RETRY_LIMIT, op)
        if timeout is not None:
            message.timeout = check.seconds(timeout, "timeout", op)
        if target == queue:
            self.broker.run(self.ops.edit_task(queue, task_id, data, message.encode_options(), self.actor, new_type))
        else:
            try:
                new_queue = self.broker.run(self.ops.enqueue(target, [Placement(message)], self.actor))
            except TaskIdConflictError:
                raise TaskIdConflictError(
                    f"queue {target!r} already holds a task {task_id!r}; nothing was changed", op=op
                ) from None
            if new_queue:
                self._redis("edit_task", self.conn.sadd, self.keys.queues, target)
            self.broker.run(self.ops.delete_task(queue, task_id, self.actor))
        try:
            return self.get_task(target, task_id)
        except TaskNotFoundError:
            # The edit held, and a worker already ran the task and deleted it on success (no retention): report the
            # task as the edit left it, not a "not found" for an edit that worked (issue 23).
            return TaskInfo(
                id=task_id, type=message.type, queue=target, state="pending", payload=data,
                max_retry=message.max_retry, timeout=message.effective_timeout(), retention=message.retention,
            )  # fmt: skip

    def archive_task(self, queue: str, task_id: str) -> None:
        """Archive a pending, scheduled or retry task now.

        Raises:
            ValidationError: the queue name or task id is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not pending, scheduled or retry.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._task_action("archive_task", queue, task_id)

    def _task_action(self, name: str, queue: str, task_id: str) -> None:
        self._acting_on(queue, name)
        check.task_id(task_id, f"inspector.{name}")
        if name == "archive_task":
            call = self.ops.archive_task(queue, task_id, self.actor, self.archive_limits(queue))
        else:
            call = getattr(self.ops, name)(queue, task_id, self.actor)
        self.broker.run(call)

    def queue_definition(self, queue: str) -> QueueSpec | None:
        """The queue's definition as mirrored from the admin (cap, rate limit, weight); None when not defined.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return self.policies.get(self.conn, "inspector.queue_definition").queues.get(queue)

    def archive_limits(self, queue: str) -> ArchiveLimits:
        """The queue's archive limits from the retention policies (engine-wide ``Limits`` where they set none).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return self.policies.get(self.conn, "inspector.archive_limits").archive_limits(queue)

    def cancel_task(self, queue: str, task_id: str) -> int:
        """Ask the worker running the task to cancel it; returns how many workers heard the request.

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not active.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._check_layout("cancel_task")
        task = self.get_task(queue, task_id)
        if task.state != "active":
            raise FailedPreconditionError(f"task {task_id} is {task.state}, not active", op="inspector.cancel_task")
        channel = self.keys.cancel_channel(database_of(self.conn))
        return int(self._redis("cancel_task", self.conn.publish, channel, cancel_message(queue, task_id)))

    def delete_all(self, queue: str, state: str) -> int:
        """Delete every task of ``state``; returns how many.

        Raises:
            ValidationError: the queue name is malformed, or ``state`` is not pending, scheduled, retry, archived
                or completed (active tasks are cancelled, not deleted).
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._bulk("delete_all", self._acting_on(queue, "delete_all"), state, DELETABLE)

    def run_all(self, queue: str, state: str) -> int:
        """Make every task of ``state`` pending now; returns how many.

        Raises:
            ValidationError: the queue name is malformed, or ``state`` is not scheduled, retry or archived.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._bulk("run_all", self._acting_on(queue, "run_all"), state, RUNNABLE)

    def archive_all(self, queue: str, state: str) -> int:
        """Archive every task of ``state``; returns how many.

        Raises:
            ValidationError: the queue name is malformed, or ``state`` is not pending, scheduled or retry.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        return self._bulk("archive_all", self._acting_on(queue, "archive_all"), state, ARCHIVABLE)

    def cancel_all(self, queue: str) -> int:
        """Ask for every active task of the queue to be cancelled; returns how many were asked.

        Raises:
            ValidationError: the queue name is malformed.
            LayoutVersionError: the keyspace is at another key layout (see ``layout``).
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self._acting_on(queue, "cancel_all")
        ids = self._redis("cancel_all", self.conn.zrange, self.keys.queue(queue).lease, 0, -1)
        channel = self.keys.cancel_channel(database_of(self.conn))
        if is_cluster(self.conn):  # a cluster pipeline refuses PUBLISH
            for task_id in ids:
                self._redis("cancel_all", self.conn.publish, channel, cancel_message(queue, task_id.decode()))
            return len(ids)
        pipe = self.conn.pipeline(transaction=False)
        for task_id in ids:
            pipe.publish(channel, cancel_message(queue, task_id.decode()))
        self._redis("cancel_all", pipe.execute)
        return len(ids)

    def _bulk(self, name: str, queue: str, state: str, allowed: frozenset[str]) -> int:
        if state not in allowed:
            raise ValidationError(
                f"{name} takes a state among {', '.join(sorted(allowed))}, not {state!r}", op=f"inspector.{name}"
            )
        total = 0
        extra = {"archive_limits": self.archive_limits(queue)} if name == "archive_all" else {}
        while True:
            moved = int(self.broker.run(getattr(self.ops, name)(queue, state, self.actor, **extra)))
            total += moved
            if moved == 0:
                return total

    def redis_info(self) -> dict[str, Any]:
        """Redis's INFO (version, uptime, memory, clients, persistence…) for the console, the CLI and /metrics.

        Where the server refuses INFO (renamed or disabled: managed Redis often does), what it still answers:
        ``info_refused`` (``INFO_REFUSED``) holds the server's reply, and ``dbsize`` the number of keys when DBSIZE
        is allowed. Callers show that instead of failing.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        try:
            return dict(self._redis("redis_info", self.conn.info))
        except RedisCommandError as exc:
            info: dict[str, Any] = {INFO_REFUSED: exc.message}
        try:
            info["dbsize"] = int(self._redis("redis_info", self.conn.dbsize))
        except RedisCommandError:
            pass  # refused too: the refusal alone is what there is to show
        return info

    # -- servers -----------------------------------------------------------------------------------------------

    def servers(self) -> list[ServerInfo]:
        """Servers whose heartbeat is current, with the tasks each is running.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        ids = self._running_server_ids()
        pipe = self.conn.pipeline(transaction=False)
        for server_id in ids:
            pipe.get(self.keys.server(server_id))
            pipe.hgetall(self.keys.workers(server_id))
        replies = self._redis("servers", pipe.execute) if ids else []
        servers = []
        for index in range(0, len(replies), 2):
            raw, workers = replies[index], replies[index + 1]
            if raw:
                active = sorted((json.loads(v) for v in workers.values()), key=lambda w: w.get("started", 0))
                servers.append(server_info(json.loads(raw), active))
        return sorted(servers, key=lambda s: s.id)

    def _running_server_ids(self) -> list[str]:
        now = to_ms(self.broker.clock.now())
        return [i.decode() for i in self._redis("servers", self.conn.zrangebyscore, self.keys.servers, now, "+inf")]

    def server(self, server_id: str) -> ServerInfo:
        """One server whose heartbeat is current.

        Raises:
            ValidationError: ``server_id`` is not a string of at most 320 characters without control characters.
            ServerNotFoundError: no server of that id has a current heartbeat.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.server")
        for server in self.servers():
            if server.id == server_id:
                return server
        raise ServerNotFoundError(f"no running server {server_id!r}", op="inspector.server")

    def ended_servers(self, limit: int = 50) -> list[ServerRecord]:
        """The records of servers that stopped or were lost within ``TASKS_SERVER_RECORD_SECONDS``, the latest
        first (without those running again: a server that only lagged may come back after it was found lost).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        ids = [i.decode() for i in self._redis("ended_servers", self.conn.zrevrange, self.keys.ended_servers, 0, limit)]
        running = set(self._running_server_ids()) if ids else set()
        ids = [i for i in ids if i not in running]
        pipe = self.conn.pipeline(transaction=False)
        for server_id in ids:
            pipe.hgetall(self.keys.ended_server(server_id))
        replies = self._redis("ended_servers", pipe.execute) if ids else []
        return [record for fields in replies if (record := server_record(fields)) is not None]

    def ended_server(self, server_id: str) -> ServerRecord:
        """The record of a server that stopped or was lost (``ended_servers``).

        Raises:
            ValidationError: ``server_id`` is not a string of at most 320 characters without control characters.
            ServerNotFoundError: no record of that server (it never ran, runs now, or ended too long ago).
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.ended_server")
        record = server_record(self._redis("ended_server", self.conn.hgetall, self.keys.ended_server(server_id)))
        if record is None:
            raise ServerNotFoundError(
                f"no server {server_id!r} is running or ended in the last hour", op="inspector.ended_server"
            )
        return record

    def control_server(self, server_id: str, action: str) -> None:
        """Ask a running server to ``quiet`` (stop fetching, requeue what it fetched ahead, finish what it runs) or
        ``stop`` (shut down gracefully). The request is published on the server's control channel, which it acts on
        at once, and stored for its next heartbeat (in case it was not listening); a quiet server stays quiet until
        it stops. A stop asked of a process under a ``--processes`` supervisor ends that process, which the
        supervisor starts again under a new id. ``wait_for_acknowledgement`` tells when the server acted.

        Raises:
            ValidationError: the action is not one of SERVER_ACTIONS, or the id is no server id.
            ServerNotFoundError: no server of that id has a current heartbeat.
            RedisUnavailableError: Redis cannot be reached.
        """
        if action not in SERVER_ACTIONS:
            raise ValidationError(
                f"action must be one of {', '.join(SERVER_ACTIONS)}, not {action!r:.40}", op="inspector.control_server"
            )
        self.server(server_id)
        key = self.keys.control(server_id)
        if action == "quiet" and self._redis("control_server", self.conn.get, key) == b"stop":
            return  # a stop already asked wins over a later quiet
        self._redis("control_server", self.conn.set, key, action, ex=CONTROL_TTL)
        channel = self.keys.control_channel(server_id, database_of(self.conn))
        self._redis("control_server", self.conn.publish, channel, action)

    def acknowledgement(self, server_id: str) -> Acknowledgement | None:
        """The last request the server acted on, if any (kept an hour, also after the server has gone).

        Raises:
            ValidationError: the id is no server id.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.server_id(server_id, "inspector.acknowledgement")
        raw = self._redis("acknowledgement", self.conn.get, self.keys.control_ack(server_id))
        if not raw:
            return None
        try:
            doc = json.loads(raw)
            return Acknowledgement(str(doc["action"]), from_ms(doc.get("at")))
        except (ValueError, TypeError, KeyError):
            return None  # written by another version: as good as none

    def wait_for_acknowledgement(self, server_id: str, action: str, timeout: float) -> Acknowledgement | None:
        """Wait up to ``timeout`` seconds (real time) for the server to act on ``action`` (a stop counts for a
        quiet: it quiets first). Returns its acknowledgement, or None when none came in time.

        Raises:
            ValidationError: the id is no server id.
            RedisUnavailableError: Redis cannot be reached.
        """
        deadline = time.monotonic() + timeout
        while True:
            ack = self.acknowledgement(server_id)
            if ack is not None and acked(action, ack.action):
                return ack
            if time.monotonic() >= deadline:
                return None
            time.sleep(ACK_POLL)


#: How often ``wait_for_acknowledgement`` looks: the server acts within milliseconds of the request.
ACK_POLL = 0.05


def server_info(doc: dict[str, Any], active: list[dict[str, Any]]) -> ServerInfo:
    """A server as its heartbeat (or its record) describes it."""
    return ServerInfo(
        id=doc["id"],
        host=doc.get("host", ""),
        pid=doc.get("pid", 0),
        started_at=from_ms(doc.get("started")),
        status=doc.get("status", "active"),
        queues=doc.get("queues", {}),
        strict=doc.get("strict", False),
        concurrency=doc.get("concurrency", 0),
        active=active,
        heartbeat_at=from_ms(doc.get("heartbeat")),
        pool=doc.get("pool", "thread"),
        prefetch=doc.get("prefetch", 0),
        processed=doc.get("processed", 0),
        failed=doc.get("failed", 0),
        process_index=doc.get("process_index"),
        patterns=doc.get("patterns", []),
    )


def server_record(fields: dict[bytes, bytes]) -> ServerRecord | None:
    """The record in an ended server's hash, or None when it has none (expired, or only a task noted)."""
    raw = fields.get(SERVER_FIELD.encode())
    if not raw:
        return None
    try:
        doc = json.loads(raw)
        server = server_info(doc, [])
    except (ValueError, TypeError, KeyError):
        return None
    return ServerRecord(
        server, str(doc.get("how", "")), str(doc.get("reason", "")), from_ms(doc.get("ended")), held_tasks(fields)
    )


@dataclass
class GroupInfo:
    """A group of aggregating tasks: its name, how many tasks it holds, when the oldest joined."""

    name: str
    size: int
    oldest: datetime | None = None


def count_unlisted(info: QueueInfo, type_counts: dict[bytes, bytes]) -> None:
    """Aggregating and waiting tasks live in many structures (one per group, one per dependency), so their
    totals come from the per-type counts the scripts keep."""
    for name, value in type_counts.items():
        state = name.partition(b":")[0]
        if state == b"aggregating":
            info.aggregating += int(value)
        elif state == b"waiting":
            info.waiting += int(value)


def _entry_at(entries: list[Any], index: int) -> int:
    """The event time (ms) of ``entries[index]`` (an XRANGE reply); 0 when there is no such entry or time, so a
    bound compared with it never skips what it cannot date."""
    if not entries:
        return 0
    at = entries[index][1].get(b"at", b"")
    return int(at) if at.isdigit() else 0


def _event(fields: dict[bytes, bytes], stream_id: str = "") -> TaskEvent:
    def text(name: bytes) -> str:
        return fields.get(name, b"").decode("utf-8", "replace")

    at = fields.get(b"at")
    return TaskEvent(
        text(b"id"),
        text(b"type"),
        text(b"from"),
        text(b"to"),
        from_ms(int(at)) if at else None,
        text(b"worker"),
        text(b"error"),
        text(b"lease"),
        stream_id,
        from_ms(int(fields[b"started"])) if fields.get(b"started") else None,
    )


def _matches(
    task_type: bytes,
    payload: bytes | None,
    error: bytes | None,
    prefix: bytes | None,
    needle: bytes | None,
    redaction: Redaction | None = None,
) -> bool:
    """The search filter, on raw fields: type starts with ``prefix``; payload or last error contains ``needle``
    (the payload as ``redaction`` shows it, when given)."""
    if prefix and not task_type.startswith(prefix):
        return False
    if not needle or needle in (error or b""):
        return True
    if needle not in (payload or b""):
        return False
    # Only payloads that hold the needle get parsed, so a redacted search stays about as fast as a plain one.
    return redaction is None or needle in (redaction.apply(task_type.decode("utf-8", "replace"), payload) or b"")


def page_count(items: int, size: int) -> int:
    """How many pages of ``size`` the ``items`` fill (one, when there are none: an empty list still has a page)."""
    return max(1, -(-items // size))


def _well_formed(queue: str, task_id: str) -> bool:
    try:
        check.queue_name(queue, "inspector.existing_tasks")
        check.task_id(task_id, "inspector.existing_tasks")
    except ValidationError:
        return False
    return True
