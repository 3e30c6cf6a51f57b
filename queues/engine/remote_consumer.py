"""Consuming tasks from outside a worker process: lmstfy's consume / ack / fail / extend, for the HTTP API.

A remote consumer is an attempt like any other: ``consume`` runs the same ``dequeue`` script as a worker, with
the caller's TTR (time to run) as the lease, and hands out the lease token as an opaque handle; ``ack``, ``fail``
and ``extend`` are the ``done``/``complete``, ``retry``/``archive`` and ``extend_lease`` scripts fenced by that
token, so a consumer whose lease ran out (and whose task went back to the queue) is refused.

A remote consumer has no heartbeat, forwarder or recoverer of its own, so each consume first does that upkeep for
the queues it reads: due scheduled and retry tasks go to pending, expired leases go to retry (redelivered at
once, as lmstfy does when a TTR lapses) or to the archive when the tries are spent. Any number of consumers may
do this at once: every transition is fenced and re-checks its precondition inside its script.

Queue definitions' concurrency caps and rate limits hold for remote consumers as for workers: the same script
enforces them. Long polling waits on the pending lists' wake-up channels (``notify_if_first`` in
``lua/_lib.lua``), heard for every wait of the process on one connection (``wakeups``), bounded by the caller's
timeout, by the next due time of a scheduled, retry or leased task, by the time a rate-limited queue admits its
next start and, for a queue at its concurrency cap with tasks pending, by a short recheck (a freed slot publishes
nothing), so it never spins.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

from . import validation as check
from .broker import Broker, BrokerOptions
from .broker.connection import DEFAULT_REDIS_URL, connect
from .clock import Clock, to_ms
from .errors import LeaseLostError, TaskNotFoundError, ValidationError
from .handlers import Task, default_retry_delay
from .message import TaskMessage
from .policies import PolicyCache, PolicySet
from .quoting import shown
from .sans_io import Batch, Command
from .settings import DEFAULTS
from .transitions import BULK_CHUNK, PERIODIC_LIMIT, Leased
from .wakeups import WakeUps, glob_escape
from .worker_store import WorkerStore

MAX_QUEUES = 16  # queues one consume may read
MAX_COUNT = 100  # tasks one consume may take
MAX_WAIT = 60.0  # seconds a consume may wait
MAX_TTR = 24 * 3600.0  # seconds a lease may last before it must be extended
MAX_ERROR = 4096
MAX_WAITERS = 10_000  # consumes one process may let wait at once: each holds a thread and, in turn, a connection
MIN_WAIT_SLICE = 0.2  # seconds: the shortest sleep between two fetches while waiting, so nothing ever spins
# A slot freed under a concurrency cap publishes nothing (an ack would have to wake every subscriber), so a long
# poll on a queue held at its cap with tasks pending looks again this often.
CAPPED_RECHECK = 0.2
TTR_EXPIRED = "ttr expired: the consumer neither acknowledged nor extended the task in time"
TTL_EXPIRED = "ttl expired: nobody consumed the task before its deadline"
UNDECODABLE = "undecodable task message"
#: Connections of a remote consumer's pool beyond one per waiting consume and one for the wake-ups: for the
#: requests that do not wait (ack, fail, extend, a consume without a timeout, dead letters).
REQUEST_CONNECTIONS = 16
#: Seconds between two notes that this process consumes a queue (``Keys.api_consumed``); well inside
#: ``serving.API_SERVED_WINDOW``, so a queue polled at least that often never looks unserved.
MARK_EVERY = 5.0


@dataclass
class Delivery:
    """A task handed to a remote consumer, with the lease token that its ack, fail or extend must present."""

    id: str
    queue: str
    type: str
    payload: bytes
    lease: str
    lease_expires_at: float  # epoch seconds
    retried: int
    max_retry: int
    headers: dict[str, str] = field(default_factory=dict)
    deadline: float | None = None  # epoch seconds, from the publisher's TTL


@dataclass
class Failure:
    """Where ``fail`` sent the task: ``retry`` (with the time it runs again) or ``archived``."""

    state: str
    retry_at: float | None = None


def _queues(queues: Any, op: str) -> list[str]:
    if isinstance(queues, str) or not isinstance(queues, Sequence) or not queues:
        raise ValidationError("queues must be a non-empty list of queue names", op=op)
    if len(queues) > MAX_QUEUES:
        raise ValidationError(f"queues holds {len(queues)} names; the limit is {MAX_QUEUES}", op=op)
    names = [check.queue_name(q, op) for q in queues]
    return list(dict.fromkeys(names))


def _ttr(ttr: Any, op: str) -> float:
    value = check.seconds(ttr, "ttr", op)
    if value > MAX_TTR:
        raise ValidationError(f"ttr must be at most {MAX_TTR:.0f} seconds, got {ttr}", op=op)
    return value


class RemoteConsumer:
    """``RemoteConsumer(redis_url)``; ``actor`` names the consumer in the events of its transitions. ``skew`` is how
    long past its expiry a lease is left alone before it is recovered (clock differences between machines).

    ``max_waiters``: how many consumes may wait at once in this process (the caller bounds them; the HTTP API with
    ``TASKS_API_MAX_WAITERS``). Without a ``conn``, the pool is sized from it: a waiting consume uses one
    connection at a time for its fetches, the wake-ups of all of them one more (``wakeups``), and
    ``REQUEST_CONNECTIONS`` serve the acks, fails and extends in flight, which wait for a free connection when
    they outnumber them."""

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        actor: str = "api",
        skew: float = DEFAULTS.api_recovery_skew_seconds,
        max_waiters: int = DEFAULTS.api_max_waiters,
        **options: Unpack[BrokerOptions],
    ) -> None:
        max_waiters = check.count(max_waiters, "max_waiters", 1, MAX_WAITERS, "consumer")
        if options.get("conn") is None:
            options["conn"] = connect(redis_url, pool_size=max_waiters + 1 + REQUEST_CONNECTIONS)
        self.broker = Broker(redis_url, **options)
        self.store = WorkerStore(self.broker)
        self.keys = self.broker.keys
        self.ops = self.broker.transitions
        self.actor = actor
        self.skew = skew
        self.policies = PolicyCache(self.keys)
        self._marked: dict[str, float] = {}  # queue -> when this consumer last wrote it to Keys.api_consumed
        # Every queue's wake-up channel: the prefix taken literally, any queue name between the braces.
        pending = self.keys.queue("*").pending
        self.wakeups = WakeUps(self.broker, glob_escape(self.keys.prefix) + pending[len(self.keys.prefix) :])

    @property
    def clock(self) -> Clock:
        return self.broker.clock

    def _send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One plain command through the broker, as operation ``consumer.<op>``."""
        return self.broker.send(f"consumer.{op}", name, *args, **kwargs)

    def _policies(self) -> PolicySet:
        return self.policies.get(self.broker, "consumer.policies")

    # -- consuming ---------------------------------------------------------------------------------------------

    def consume(
        self, queues: Sequence[str], ttr: float, *, count: int = 1, timeout: float = 0.0, actor: str | None = None
    ) -> list[Delivery]:
        """Up to ``count`` tasks from the first of ``queues`` (in order) that has any, each leased for ``ttr``
        seconds. Waits up to ``timeout`` seconds for one to arrive; returns [] when none did."""
        op = "consumer.consume"
        names = _queues(queues, op)
        ttr = _ttr(ttr, op)
        count = check.count(count, "count", 1, MAX_COUNT, op)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= MAX_WAIT:
            raise ValidationError(f"timeout must be between 0 and {MAX_WAIT:.0f} seconds, got {shown(timeout)}", op=op)
        actor = actor or self.actor
        self._mark_consumed(names)
        got, _ = self._fetch(names, ttr, count, actor)
        if got or timeout <= 0:
            return got
        end = self.clock.now() + timeout
        with self.wakeups.watching([self.keys.queue(q).pending for q in names]) as woken:
            while True:
                woken.clear()  # before the fetch: a push while it runs makes the wait below return at once
                got, limited_until = self._fetch(names, ttr, count, actor)
                now = self.clock.now()
                if got or now >= end:
                    return got
                until = min(t for t in (end, self.next_due(names), limited_until) if t is not None)
                woken.wait(max(MIN_WAIT_SLICE, until - now))

    def _mark_consumed(self, queues: Sequence[str]) -> None:
        """Note in Redis that the API consumes from ``queues`` (``Keys.api_consumed``), so the console does not
        report them unserved for want of a Python worker. One HSET per queue every MARK_EVERY seconds at most, per
        process: a busy poller costs Redis nothing more."""
        now = self.clock.now()
        due = [q for q in queues if now - self._marked.get(q, float("-inf")) >= MARK_EVERY]
        if not due:
            return
        self._send("consume", "hset", self.keys.api_consumed, mapping=dict.fromkeys(due, to_ms(now)))
        self._marked.update(dict.fromkeys(due, now))

    def fetch(self, queues: Sequence[str], ttr: float, count: int, actor: str | None = None) -> list[Delivery]:
        """One pass without waiting: upkeep and dequeue, queue by queue, until one yields tasks."""
        return self._fetch(queues, ttr, count, actor)[0]

    def _fetch(
        self, queues: Sequence[str], ttr: float, count: int, actor: str | None
    ) -> tuple[list[Delivery], float | None]:
        """``fetch``, and the soonest time a queue held back by its rate limit or its concurrency cap may admit a
        start (None: none was held back)."""
        actor = actor or self.actor
        policies = self._policies()
        limited: list[float] = []
        for queue in queues:
            self.maintain(queue, actor)
            spec = policies.queues.get(queue)
            cap, rate = (spec.concurrency_cap, spec.rate) if spec is not None else (0, None)
            # A batch made only of tasks past their TTL yields nothing: take another, a bounded number of times.
            for _ in range(10):
                token_prefix = f"{actor}:{os.urandom(8).hex()}:"
                leased = self.broker.run(self.ops.dequeue(queue, count, ttr, actor, token_prefix, cap, rate))
                if leased.limited_until is not None:
                    limited.append(leased.limited_until)
                if not leased:
                    if cap > 0 and self._send("consume", "llen", self.keys.queue(queue).pending):
                        limited.append(self.clock.now() + CAPPED_RECHECK)  # at its cap: tasks wait for a slot
                    break
                out = self._deliveries(queue, leased, ttr, actor, policies)
                if out:
                    return out, None
        return [], min(limited, default=None)

    def _deliveries(
        self, queue: str, leased: list[Leased], ttr: float, actor: str, policies: PolicySet
    ) -> list[Delivery]:
        now = self.clock.now()
        out = []
        for item in leased:
            try:
                message = TaskMessage.decode(item.id, queue, item.type, item.payload, item.options)
            except (ValueError, TypeError, UnicodeDecodeError) as exc:
                self.broker.run_unless_raced(
                    self.ops.archive(
                        queue,
                        item.id,
                        item.token,
                        f"{UNDECODABLE}: {exc}",
                        worker=actor,
                        archive_limits=policies.archive_limits(queue),
                    )
                )
                continue
            if message.deadline_ms and message.deadline_ms <= to_ms(now):
                self.broker.run_unless_raced(self.ops.expire(queue, item.id, item.token, TTL_EXPIRED, actor))
                continue
            out.append(
                Delivery(
                    item.id,
                    queue,
                    message.type,
                    message.payload,
                    item.token,
                    now + ttr,
                    item.retried,
                    message.max_retry,
                    message.headers,
                    message.deadline_ms / 1000 or None,
                )
            )
        return out

    # -- upkeep ------------------------------------------------------------------------------------------------

    def maintain(self, queue: str, actor: str | None = None) -> int:
        """Recover the queue's expired leases, then move its due scheduled and retry tasks to pending (a bounded
        amount per call). Returns how many tasks moved."""
        actor = actor or self.actor
        moved = self.recover(queue, actor)
        for state in ("scheduled", "retry"):
            moved += int(self.broker.run(self.ops.forward(queue, state, actor)))
        return moved

    def recover(self, queue: str, actor: str | None = None, limit: int = PERIODIC_LIMIT) -> int:
        """Tasks whose lease ran out more than ``skew`` ago: to retry now, or to the archive when spent."""
        actor = actor or self.actor
        now = self.clock.now()
        cutoff = now - self.skew
        recovered = 0
        limits = None
        for leased in self.store.expired_leases(queue, cutoff, limit):
            if not leased.token and not leased.type:
                self.broker.run_unless_raced(self.ops.drop_lease(queue, leased.id))
                continue
            try:
                message = TaskMessage.decode(leased.id, queue, leased.type, leased.payload, leased.options)
                retry = leased.retried < message.max_retry
            except (ValueError, TypeError, UnicodeDecodeError):
                retry = False
            if retry:
                call = self.ops.retry(
                    queue, leased.id, leased.token, now, TTR_EXPIRED, worker=actor, expired_before=cutoff
                )
            else:
                limits = limits or self._policies().archive_limits(queue)
                call = self.ops.archive(
                    queue,
                    leased.id,
                    leased.token,
                    TTR_EXPIRED,
                    worker=actor,
                    expired_before=cutoff,
                    archive_limits=limits,
                )
            recovered += self.broker.run_unless_raced(call)
        return recovered

    def next_due(self, queues: Sequence[str]) -> float | None:
        """The soonest time (epoch seconds) at which upkeep could make a task of ``queues`` available: a
        scheduled or retry task coming due, or a lease running out (plus the skew). None when nothing waits."""
        reads = []
        for queue in queues:
            q = self.keys.queue(queue)
            reads += [Command("zrange", (key, 0, 0), {"withscores": True}) for key in (q.scheduled, q.retry, q.lease)]
        replies = self.broker.execute("consumer.next_due", Batch(reads, atomic=False)) if reads else []
        times = []
        for index, reply in enumerate(replies):
            if reply:
                extra = self.skew if index % 3 == 2 else 0.0
                times.append(float(reply[0][1]) / 1000 + extra)
        return min(times) if times else None

    # -- ending an attempt -------------------------------------------------------------------------------------

    def _attempt(self, queue: str, task_id: str, token: str, op: str) -> tuple[TaskMessage, int]:
        """The task's message and retry count, after checking that ``token`` holds its lease."""
        check.queue_name(queue, op)
        check.task_id(task_id, op)
        if not isinstance(token, str) or not token or len(token) > 256:
            raise ValidationError("lease must be the non-empty lease token that consume returned", op=op)
        check.text(token, "lease", op)
        fields = self._send(
            op,
            "hmget",
            self.keys.queue(queue).task(task_id),
            "type",
            "msg",
            "payload",
            "retried",
            "lease",
            "state",
        )
        if fields[0] is None:
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(queue)}", op=op)
        if fields[5] != b"active" or (fields[4] or b"").decode() != token:
            raise LeaseLostError(
                f"the lease of task {shown(task_id)} is not held by this token (it expired, or the "
                "task was acknowledged already)",
                op=op,
            )
        try:
            message = TaskMessage.decode(task_id, queue, fields[0], fields[2] or b"", fields[1] or b"")
        except (ValueError, TypeError, UnicodeDecodeError):
            message = TaskMessage(task_id, fields[0].decode("utf-8", "replace"), fields[2] or b"", queue, max_retry=0)
        return message, int(fields[3] or 0)

    def ack(self, queue: str, task_id: str, token: str, actor: str | None = None) -> None:
        """Success: the task is deleted, or kept as completed for its retention. Raises LeaseLostError when the
        token no longer holds the lease, TaskNotFoundError when there is no such task."""
        op = "consumer.ack"
        message, _ = self._attempt(queue, task_id, token, op)
        actor = actor or self.actor
        if message.retention:
            call = self.ops.complete(queue, [(task_id, token, message.retention)], actor)
        else:
            call = self.ops.done(queue, [(task_id, token)], actor)
        status = self.broker.run(call)[0]
        if status == "NOT_FOUND":
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(queue)}", op=op)
        if status != "OK":
            raise LeaseLostError(f"the lease of task {shown(task_id)} is not held by this token", op=op)

    def fail(
        self,
        queue: str,
        task_id: str,
        token: str,
        error: str = "",
        *,
        delay: float | None = None,
        skip_retry: bool = False,
        actor: str | None = None,
    ) -> Failure:
        """A failed attempt, as a worker handles one: to retry after ``delay`` seconds (default: the workers'
        backoff), or to the archive when the retries are spent or ``skip_retry``."""
        op = "consumer.fail"
        if not isinstance(error, str):
            raise ValidationError("error must be a string", op=op)
        if delay is not None:
            delay = check.seconds(delay, "delay", op, allow_zero=True)
        message, retried = self._attempt(queue, task_id, token, op)
        actor = actor or self.actor
        # Stored with what UTF-8 cannot encode replaced, not refused: the task must still be failed.
        error = check.encodable(error[:MAX_ERROR]) or "failed by the consumer"
        if skip_retry or retried >= message.max_retry:
            limits = self._policies().archive_limits(queue)
            self.broker.run(self.ops.archive(queue, task_id, token, error, worker=actor, archive_limits=limits))
            return Failure("archived")
        if delay is None:
            delay = default_retry_delay(retried, RuntimeError(error), Task(message, retried))
        retry_at = self.clock.now() + delay
        self.broker.run(self.ops.retry(queue, task_id, token, retry_at, error, worker=actor))
        return Failure("retry", retry_at)

    def extend(self, queue: str, task_id: str, token: str, ttr: float) -> float:
        """Push the lease out to ``ttr`` seconds from now; returns the new expiry (epoch seconds)."""
        op = "consumer.extend"
        ttr = _ttr(ttr, op)
        self._attempt(queue, task_id, token, op)
        lost = self.broker.run(self.ops.extend_leases(queue, [(task_id, token)], ttr))
        if lost:
            raise LeaseLostError(f"the lease of task {shown(task_id)} is not held by this token", op=op)
        return self.clock.now() + ttr

    # -- dead letters (archived tasks) ---------------------------------------------------------------------------

    def respawn(self, queue: str, limit: int, actor: str | None = None) -> int:
        """Up to ``limit`` archived tasks, oldest first, back to pending; returns how many moved."""
        return self._bulk("run_all", queue, limit, actor)

    def delete_dead(self, queue: str, limit: int, actor: str | None = None) -> int:
        """Delete up to ``limit`` archived tasks, oldest first; returns how many went."""
        return self._bulk("delete_all", queue, limit, actor)

    def _bulk(self, name: str, queue: str, limit: int, actor: str | None) -> int:
        op = f"consumer.{name}"
        check.queue_name(queue, op)
        limit = check.count(limit, "limit", 1, 1_000_000, op)
        total = 0
        while total < limit:
            chunk = min(BULK_CHUNK, limit - total)
            moved = int(self.broker.run(getattr(self.ops, name)(queue, "archived", actor or self.actor, chunk)))
            total += moved
            if moved < chunk:
                break
        return total

    def close(self) -> None:
        self.wakeups.close()
        self.broker.close()


__all__ = ["RemoteConsumer", "Delivery", "Failure"]
