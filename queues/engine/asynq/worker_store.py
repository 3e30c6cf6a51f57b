"""What a Python worker writes on asynq's keys: each of asynq's worker transitions (``internal/rdb``: dequeue,
done, mark as complete, retry, archive, requeue, forward, the recoverer's read, the janitor, result writing) as one
script of ``lua/work_*.lua``, and the server registry the heartbeat keeps, so Go and Python workers share queues.

The message is rewritten here, where asynq's Go rewrites it (retry, archive and completion encode a new ``msg``),
with ``WireTask``, so fields this code does not know pass through. Times are the broker's clock, in unix seconds
as asynq writes them (``pending_since`` in ns). A transition whose task is not active any more changes nothing and
raises ``LeaseLostError`` (or ``TaskNotFoundError`` when the task is gone), where asynq's replies "NOT FOUND".

It deliberately shares its name with ``queues/engine/worker_store.py``, whose job it does over asynq's keys.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..broker import Broker, BrokerStore, KeptConnection, Subscription
from ..clock import utc_day
from ..errors import EngineError, ValidationError
from ..sans_io import Pipeline, command
from ..transitions import Call
from .keys import ALL_SERVERS, ALL_WORKERS, CANCEL_CHANNEL, AsynqQueueKeys, server_info_key, workers_key
from .limits import ASYNQ_ARCHIVE_AGE, ASYNQ_ARCHIVE_ENTRIES, ASYNQ_LEASE
from .scripts import call
from .wire import WireError, WireServer, WireTask, WireWorker

STATS_TTL = 90 * 86400  # seconds: asynq keeps daily counters 90 days
FORWARD_BATCH = 100  # tasks per forward script call, as asynq's forwardCmd
MAX_INT64 = str(2**63 - 1)  # where asynq's running totals start again at 1


@dataclass
class Dequeued:
    """A task a dequeue handed out: its message, decoded, and when its lease ends."""

    message: WireTask
    lease_expires_at: float  # unix seconds, as written in the lease ZSET


class AsynqWorkerStore(BrokerStore):
    """The asynq worker's reads and writes; ``broker.clock`` is its time (tests inject a ``FakeClock``)."""

    area = "asynq_worker"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.clock = broker.clock

    # -- the processor's transitions ------------------------------------------------------------------------------

    def dequeue(self, queues: list[str], lease_seconds: float = ASYNQ_LEASE) -> Dequeued | None:
        """The first pending task of the first queue that has one, moved to active with a lease of
        ``lease_seconds``; queues are tried in the order given (the caller orders them, weighted or strict) and a
        paused one is skipped. None when every queue is empty or paused. ``dequeue_many`` with a count of one."""
        taken = self.dequeue_many(queues, 1, lease_seconds)
        return taken[0] if taken else None

    def dequeue_many(self, queues: list[str], count: int, lease_seconds: float = ASYNQ_LEASE) -> list[Dequeued]:
        """Up to ``count`` pending tasks, each moved to active with its own lease of ``lease_seconds``, as that many
        of asynq's dequeues would: from the first queue of the order given that has tasks, then from the next ones
        while fewer than ``count`` are taken; a paused queue is skipped. One script call per queue tried, so a
        worker with ``count`` free slots fetches their tasks in one round trip. Empty when every queue is empty or
        paused.

        A message that cannot be decoded is archived as it is (it can never run, and would otherwise come back
        from every lease expiry) and another task is taken in its place."""
        _positive(lease_seconds, "lease_seconds", "dequeue")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValidationError(f"count must be a positive integer, not {count!r}", op=f"{self.area}.dequeue")
        taken: list[Dequeued] = []
        for queue in _queue_names(queues, "dequeue"):
            while len(taken) < count:
                wanted = count - len(taken)
                found, expires_at = self._dequeue_batch(queue, wanted, lease_seconds)
                taken += self._decoded(AsynqQueueKeys(queue), found, expires_at)
                if len(found) < wanted:
                    break  # the queue is empty or paused: on to the next
        return taken

    def done(self, message: WireTask) -> None:
        """Success without retention: the task is deleted and counted as processed; its unique lock is released."""
        self.broker.run(self.done_call(message))

    def mark_complete(self, message: WireTask) -> None:
        """Success with retention: the task is kept in completed until now + its retention, its message stamped
        with the completion time; counted as processed; its unique lock is released."""
        self.broker.run(self.complete_call(message))

    def retry(self, message: WireTask, process_at: float, error: str, is_failure: bool = True) -> None:
        """The task waits in retry until ``process_at`` (unix seconds), its message carrying ``error`` and the time
        of the failure; a failure (``is_failure``) counts a retry and is counted as processed and failed."""
        self.broker.run(self.retry_call(message, process_at, error, is_failure))

    def archive(self, message: WireTask, error: str) -> None:
        """The task is archived with ``error`` and the time of the failure, counted as processed and failed; the
        archive is trimmed as asynq trims it (90 days, 10,000 tasks)."""
        self.broker.run(self.archive_call(message, error))

    def requeue(self, message: WireTask) -> None:
        """A task still running at shutdown goes back to the head of pending, to run next."""
        self.broker.run(self.requeue_call(message))

    # The same transitions as calls not yet run, stamped with the time they are built: ``write`` runs one, and
    # ``write_and_dequeue`` runs one with the dequeue of the task that takes the finished one's slot.

    def done_call(self, message: WireTask) -> Call:
        q, now = self._task_queue(message, "done"), self.clock.now()
        keys = [q.active, q.lease, q.task(message.id), q.processed_on(utc_day(now)), q.processed_total]
        return self._call("done", "work_done", keys + _unique(message), [message.id, _stats_expiry(now), MAX_INT64])

    def complete_call(self, message: WireTask) -> Call:
        q, now = self._task_queue(message, "mark_complete"), self.clock.now()
        completed = replace(message, completed_at=int(now))
        keys = [q.active, q.lease, q.completed, q.task(message.id), q.processed_on(utc_day(now)), q.processed_total]
        args = [message.id, _stats_expiry(now), int(now) + message.retention, completed.encode(), MAX_INT64]
        return self._call("mark_complete", "work_complete", keys + _unique(message), args)

    def retry_call(self, message: WireTask, process_at: float, error: str, is_failure: bool = True) -> Call:
        _time(process_at, "process_at", "retry")
        q, now = self._task_queue(message, "retry"), self.clock.now()
        failed = replace(message, retried=message.retried + int(is_failure), error_msg=error, last_failed_at=int(now))
        args = [message.id, failed.encode(), int(process_at), _stats_expiry(now), int(is_failure), MAX_INT64]
        return self._call("retry", "work_retry", _failure_keys(q, message.id, q.retry, now), args)

    def archive_call(self, message: WireTask, error: str) -> Call:
        q, now = self._task_queue(message, "archive"), self.clock.now()
        failed = replace(message, error_msg=error, last_failed_at=int(now))
        return self._archive_call(q, message.id, failed.encode(), now)

    def requeue_call(self, message: WireTask) -> Call:
        q = self._task_queue(message, "requeue")
        return self._call("requeue", "work_requeue", [q.active, q.lease, q.pending, q.task(message.id)], [message.id])

    def keep_connection(self) -> KeptConnection:
        """A connection for one thread's ``write_and_dequeue`` calls (see ``Broker.keep_connection``)."""
        return self.broker.keep_connection()

    def write(self, write: Call) -> None:
        """Run a transition built by one of the ``*_call`` methods."""
        self.broker.run(write)

    def write_and_dequeue(
        self, write: Call, queue: str, lease_seconds: float = ASYNQ_LEASE, kept: KeptConnection | None = None
    ) -> tuple[EngineError | None, list[Dequeued]]:
        """A finished task's transition (``write``, from a ``*_call`` method) and the dequeue of at most one task of
        ``queue`` for the slot it frees, sent together: one round trip where asynq's processor makes two. Each is
        its own script, atomic alone, as when run one after the other.

        Returns the write's error (returned, not raised, so the task dequeued with it is never dropped; None when
        it was applied) and the task dequeued (empty when ``queue`` is empty or paused, or when the connection
        failed before the dequeue's reply: a task it may have taken then comes back when its lease runs out).
        ``kept``: sent on that connection (``keep_connection``), not one checked out of the pool."""
        _positive(lease_seconds, "lease_seconds", "dequeue")
        fetch, expires_at = self._dequeue_call(_queue_name(queue, "dequeue"), 1, lease_seconds)
        outcomes = self.broker.run_pipeline(Pipeline([write, fetch]), kept=kept)
        error = outcomes[0] if isinstance(outcomes[0], EngineError) else None
        if len(outcomes) < 2 or isinstance(outcomes[1], Exception):
            return error, []
        return error, self._decoded(AsynqQueueKeys(queue), outcomes[1], expires_at)

    def extend_leases(self, queue: str, task_ids: list[str], lease_seconds: float = ASYNQ_LEASE) -> float:
        """The leases of running tasks extended to now + ``lease_seconds``; returns that expiry (unix seconds). A
        lease no longer there (a recoverer took the task over) is not made again (ZADD XX, as asynq's heartbeat)."""
        _positive(lease_seconds, "lease_seconds", "extend_leases")
        expires_at = float(int(self.clock.now() + lease_seconds))
        if task_ids:
            lease = AsynqQueueKeys(_queue_name(queue, "extend_leases")).lease
            self._send("extend_leases", "zadd", lease, dict.fromkeys(task_ids, expires_at), xx=True)
        return expires_at

    def write_result(self, queue: str, task_id: str, data: bytes) -> int:
        """``data`` as the task's result; returns its length. TaskNotFoundError when the task no longer exists."""
        key = AsynqQueueKeys(_queue_name(queue, "write_result")).task(_task_id(task_id, "write_result"))
        return int(self.broker.run(call(f"{self.area}.write_result", "work_write_result", [key], [bytes(data)])))

    # -- the forwarder, the recoverer and the janitor -------------------------------------------------------------

    def forward(self, queues: list[str]) -> int:
        """Due scheduled and retry tasks to pending (or to their aggregation group), as asynq's forwarder: each
        script call moves at most 100, and calls are repeated until none is due. Returns how many moved."""
        moved = 0
        for queue in _queue_names(queues, "forward"):
            q = AsynqQueueKeys(queue)
            for source in (q.scheduled, q.retry):
                while True:
                    now = self.clock.now()
                    group_prefix = q.group("")  # asynq:{q}:g:, followed by a group name in the script
                    args = [int(now), q.task_prefix, int(now * 1e9), group_prefix, FORWARD_BATCH]
                    keys = [source, q.pending, q.groups]
                    n = int(self.broker.run(call(f"{self.area}.forward", "work_forward", keys, args)))
                    moved += n
                    if n < FORWARD_BATCH:
                        break
        return moved

    def lease_expired(self, queues: list[str], cutoff: float) -> list[WireTask]:
        """The messages of active tasks whose lease ended by ``cutoff`` (unix seconds), for the recoverer. The
        caller gives the cutoff with asynq's allowance for clock skew (30 s before now). A message that cannot be
        decoded is left out."""
        _time(cutoff, "cutoff", "lease_expired")
        found = []
        for queue in _queue_names(queues, "lease_expired"):
            q = AsynqQueueKeys(queue)
            args = [int(cutoff), q.task_prefix]
            raw = self.broker.run(call(f"{self.area}.lease_expired", "work_lease_expired", [q.lease], args))
            for data in raw:
                try:
                    found.append(WireTask.decode(data))
                except WireError:
                    continue  # dequeue archives such a task; one already active stays for an operator
        return found

    def delete_expired_completed(self, queue: str, batch: int = 100) -> int:
        """Completed tasks whose retention ended, deleted ``batch`` per script call until none is left, as asynq's
        janitor. Returns how many were deleted."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValidationError(f"batch must be a positive integer, not {batch!r}", op=f"{self.area}.janitor")
        q = AsynqQueueKeys(_queue_name(queue, "delete_expired_completed"))
        deleted = 0
        while True:
            args = [int(self.clock.now()), q.task_prefix, batch]
            n = int(self.broker.run(call(f"{self.area}.janitor", "work_delete_completed", [q.completed], args)))
            deleted += n
            if n < batch:
                return deleted

    # -- the heartbeat's registry and the cancel channel ----------------------------------------------------------

    def write_server_state(self, server: WireServer, workers: list[WireWorker], ttl: float) -> None:
        """This server's info and one entry per running task (keyed by task id), both expiring after ``ttl``
        seconds unless written again, and indexed in ``asynq:servers`` / ``asynq:workers`` by that expiry: what
        asynq's heartbeat writes, so Go's Inspector, asynq's CLI and asynqmon list the server."""
        _positive(ttl, "ttl", "write_server_state")
        now = self.clock.now()
        server_key = server_info_key(server.host, server.pid, server.server_id)
        workers_hash = workers_key(server.host, server.pid, server.server_id)
        ttl_ms = math.ceil(ttl * 1000)
        expires_at = int(now + ttl)
        commands = [
            command("zadd", ALL_SERVERS, {server_key: expires_at}),
            command("zadd", ALL_WORKERS, {workers_hash: expires_at}),
            command("set", server_key, server.encode(), px=ttl_ms),
            command("delete", workers_hash),
        ]
        if workers:
            commands.append(command("hset", workers_hash, mapping={w.task_id: w.encode() for w in workers}))
            commands.append(command("pexpire", workers_hash, ttl_ms))
        self._batch("write_server_state", commands)

    def clear_server_state(self, host: str, pid: int, server_id: str) -> None:
        """This server's info and workers removed, and their index entries (a server that stops)."""
        server_key, workers_hash = server_info_key(host, pid, server_id), workers_key(host, pid, server_id)
        commands = [
            command("zrem", ALL_SERVERS, server_key),
            command("zrem", ALL_WORKERS, workers_hash),
            command("delete", server_key),
            command("delete", workers_hash),
        ]
        self._batch("clear_server_state", commands)

    def cancellations(self) -> Subscription:
        """A subscription to ``asynq:cancel``, where an operator publishes the id of a task to cancel; the caller
        owns it (one thread) and closes it."""
        subscription = self.broker.subscription(f"{self.area}.cancellations")
        subscription.subscribe(CANCEL_CHANNEL)
        return subscription

    # -- helpers --------------------------------------------------------------------------------------------------

    def _call(self, op: str, script: str, keys: list[str], args: list[Any]) -> Call:
        return call(f"{self.area}.{op}", script, keys, args)

    def _task_queue(self, message: WireTask, op: str) -> AsynqQueueKeys:
        """The keys of the message's queue, after checking it names a task."""
        _task_id(message.id, op)
        return AsynqQueueKeys(_queue_name(message.queue, op))

    def _dequeue_batch(self, queue: str, count: int, lease_seconds: float) -> tuple[list[tuple[str, bytes]], float]:
        """(task id, its raw message) of each task dequeued from ``queue`` (at most ``count``), and their leases'
        expiry."""
        fetch, expires_at = self._dequeue_call(queue, count, lease_seconds)
        return self.broker.run(fetch), expires_at

    def _dequeue_call(self, queue: str, count: int, lease_seconds: float) -> tuple[Call, float]:
        """The dequeue of at most ``count`` tasks of ``queue`` (its reply read as (task id, raw message) pairs), and
        the expiry of the leases it gives."""
        q = AsynqQueueKeys(queue)
        expires_at = float(int(self.clock.now() + lease_seconds))
        keys = [q.pending, q.paused, q.active, q.lease]
        return call(
            f"{self.area}.dequeue", "work_dequeue", keys, [int(expires_at), q.task_prefix, count], _pairs
        ), expires_at

    def _decoded(self, q: AsynqQueueKeys, found: list[tuple[str, bytes]], expires_at: float) -> list[Dequeued]:
        """The tasks dequeued, decoded; one whose message cannot be decoded is archived as it is and left out."""
        decoded = []
        for task_id, raw in found:
            try:
                decoded.append(Dequeued(WireTask.decode(raw), expires_at))
            except WireError:
                self._archive(q, task_id, raw, self.clock.now())
        return decoded

    def _archive(self, q: AsynqQueueKeys, task_id: str, encoded: bytes, now: float) -> None:
        self.broker.run(self._archive_call(q, task_id, encoded, now))

    def _archive_call(self, q: AsynqQueueKeys, task_id: str, encoded: bytes, now: float) -> Call:
        keys = _failure_keys(q, task_id, q.archived, now)
        args = [
            task_id,
            encoded,
            int(now),
            int(now - ASYNQ_ARCHIVE_AGE),
            ASYNQ_ARCHIVE_ENTRIES,
            _stats_expiry(now),
            MAX_INT64,
            q.task_prefix,
        ]
        return self._call("archive", "work_archive", keys, args)


def _pairs(reply: list[bytes]) -> list[tuple[str, bytes]]:
    """A dequeue's reply, {id, msg, id, msg...}, as (task id, msg) pairs."""
    return [(reply[i].decode(), reply[i + 1]) for i in range(0, len(reply), 2)]


def _failure_keys(q: AsynqQueueKeys, task_id: str, target: str, now: float) -> list[str]:
    """The keys of a failure's script (work_retry, work_archive): the task, where it leaves, where it goes
    (``target``), and the processed and failed counters."""
    day = utc_day(now)
    counters = [q.processed_on(day), q.failed_on(day), q.processed_total, q.failed_total]
    return [q.task(task_id), q.active, q.lease, target, *counters]


def _stats_expiry(now: float) -> int:
    return int(now) + STATS_TTL


def _unique(message: WireTask) -> list[str]:
    """The unique lock's key as the scripts' last key, when the message holds one (a Cluster refuses an empty key
    name, so none is passed otherwise)."""
    return [message.unique_key] if message.unique_key else []


def _queue_name(queue: str, op: str) -> str:
    if not isinstance(queue, str) or not queue:
        raise ValidationError(f"a queue name must be a non-empty string, not {queue!r}", op=f"asynq_worker.{op}")
    return queue


def _queue_names(queues: Iterable[str], op: str) -> list[str]:
    """The queues to work on, each checked; a bare string is refused (it would be read letter by letter)."""
    if isinstance(queues, str):
        raise ValidationError(f"queues must be a list of names, not the string {queues!r}", op=f"asynq_worker.{op}")
    return [_queue_name(queue, op) for queue in queues]


def _task_id(task_id: str, op: str) -> str:
    if not isinstance(task_id, str) or not task_id:
        raise ValidationError(f"a task id must be a non-empty string, not {task_id!r}", op=f"asynq_worker.{op}")
    return task_id


def _positive(seconds: float, name: str, op: str) -> None:
    if _time(seconds, name, op) <= 0:
        raise ValidationError(f"{name} must be a positive number of seconds, not {seconds!r}", op=f"asynq_worker.{op}")


def _time(seconds: float, name: str, op: str) -> float:
    """A number of seconds (or unix seconds), checked to be a finite number."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValidationError(f"{name} must be a finite number of seconds, not {seconds!r}", op=f"asynq_worker.{op}")
    return seconds
