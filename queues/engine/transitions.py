"""Every state transition as a ``Call``: the script, its keys and arguments, and how to read the reply.

Building a call does no I/O, so the blocking ``Broker`` and the asyncio client run the very same calls.
Per-task arguments follow the headers in ``lua/*.lua``; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import validation as check
from .clock import Clock, SystemClock, to_ms, utc_day
from .enqueue_replies import Refusal as Refusal  # public here too: part of what a call replies
from .enqueue_replies import enqueued, enqueued_or_refused
from .failures import Failure, bounded
from .keys import DEFAULT_PREFIX, Keys, QueueKeys
from .message import TaskMessage
from .operator_trace import NO_MARK, OperatorMark
from .scripts import Script, script
from .settings import DEFAULTS, TaskqSettings

DAY_COUNTER_TTL = 90 * 24 * 3600  # seconds: the dashboard charts up to 90 days back
BULK_CHUNK = 1000  # tasks per bulk script call, so Redis never blocks long on a queue of millions
PERIODIC_LIMIT = 100  # tasks per forwarder / janitor call
MAX_RATE_LIMIT = 1_000_000  # starts per period, as the admin allows


def _identity(reply: Any) -> Any:
    return reply


@dataclass
class Call:
    """One script invocation. ``parse`` turns the raw reply into the operation's result."""

    op: str
    script: Script
    keys: list[str]
    args: list[Any]
    parse: Callable[[Any], Any] = _identity


@dataclass
class Placement:
    """A task to enqueue and where it goes: pending now, or scheduled at ``process_at_ms``."""

    message: TaskMessage
    process_at_ms: int = 0
    unique_key: str = ""
    unique_ttl_ms: int = 0
    encoded_options: bytes = b""  # the message's encoded options, when shared with other tasks of the call
    #: The id was made here (``producer.new_task_id``: 128 random bits), not named by a caller: it cannot exist yet
    #: or repeat another, so the enqueue script need not look it up.
    fresh_id: bool = False


@dataclass
class Leased:
    """A task handed to a worker by dequeue, not yet decoded (a bad record must not crash the worker)."""

    id: str
    type: bytes
    options: bytes
    payload: bytes
    retried: int
    token: str
    pending_since_ms: int = 0  # when it became pending (for the wait time in the time series); 0 unknown


@dataclass
class Limits:
    """Engine-wide settings that scripts need."""

    event_maxlen: int = DEFAULTS.event_stream_maxlen
    archive_max_size: int = DEFAULTS.archive_max_size
    archive_max_age: float = DEFAULTS.archive_max_age_seconds
    error_groups_max: int = 200  # error groups kept per queue (see failures.py)
    error_groups_max_age: float = 30 * 86400  # seconds: a group unseen this long goes
    task_record_seconds: float = DEFAULTS.task_record_seconds  # how long a deleted task's record is kept (mark_kept)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: TaskqSettings) -> Limits:
        return cls(
            settings.event_stream_maxlen,
            settings.archive_max_size,
            settings.archive_max_age_seconds,
            task_record_seconds=settings.task_record_seconds,
        )


@dataclass(frozen=True)
class ArchiveLimits:
    """Archive limits of one queue (from its retention policy); ``None`` falls back to ``Limits``."""

    max_size: int | None = None
    max_age: float | None = None


def _statuses(reply: list[bytes]) -> list[str]:
    return [status.decode() for status in reply]


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` tasks of a queue started in any ``period`` seconds, across all workers (0: no limit)."""

    limit: int = 0
    period: float = 1.0

    def __post_init__(self) -> None:
        check.count(self.limit, "rate limit", 0, MAX_RATE_LIMIT, "queue definition")
        check.seconds(self.period, "rate period", "queue definition")

    def __str__(self) -> str:
        """As the admin, the console and the CLI show it: ``100 per 1 s``, or ``none``."""
        return f"{self.limit} per {self.period:g} s" if self.limit else "none"


class Dequeued(list[Leased]):
    """The tasks one dequeue handed out. ``limited_until`` (epoch seconds) is set when the queue's rate limit is
    full: no task of the queue can start before then, so a caller may leave the queue alone until that time."""

    def __init__(self, leased: Sequence[Leased] = (), limited_until: float | None = None) -> None:
        super().__init__(leased)
        self.limited_until = limited_until

    def __eq__(self, other: object) -> bool:
        # Equal to a plain list of the same tasks; to another Dequeued only with the same limited_until as well.
        if isinstance(other, Dequeued) and other.limited_until != self.limited_until:
            return False
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"Dequeued({super().__repr__()}, limited_until={self.limited_until!r})"


def _dequeued(reply: list[Any]) -> Dequeued:
    limited_ms, rows = int(reply[0]), reply[1:]
    leased = [
        Leased(
            rows[i].decode(),
            rows[i + 1],
            rows[i + 2],
            rows[i + 3],
            int(rows[i + 4]),
            rows[i + 5].decode(),
            int(rows[i + 6]),
        )
        for i in range(0, len(rows), 7)
    ]
    return Dequeued(leased, limited_ms / 1000 if limited_ms else None)


@dataclass(frozen=True)
class FetchNext:
    """Fetch-on-ack: what the ack scripts (done, complete) lease after the batch they acknowledge, from the same
    queue, with dequeue's arguments: up to ``k`` tasks for the slots the acks free, but never more than the acks
    the fence let through, and ``ahead`` more (a worker's prefetch) when at least one went through: a stale ack
    frees no slot and leases nothing. Within the queue's pause, concurrency ``cap`` and ``rate`` limit exactly as
    dequeue. One script call then both ends attempts and starts the next ones."""

    k: int
    lease_seconds: float
    token_prefix: str
    cap: int = 0
    rate: RateLimit | None = None
    ahead: int = 0


@dataclass
class Acked:
    """The reply of an ack that fetched (``FetchNext``): one status per acknowledged task, and the tasks leased."""

    statuses: list[str]
    leased: Dequeued


def _fetches(then: FetchNext | None) -> bool:
    return then is not None and (then.k > 0 or then.ahead > 0)


def _acked(reply: list[Any]) -> Acked:
    statuses, leased = reply
    return Acked(_statuses(statuses), _dequeued(leased))


def _start_times(started: Sequence[float]) -> str:
    """The start times of a batch's attempts as the done and complete scripts read them (ms, comma-separated)."""
    return ",".join(str(to_ms(t)) if t else "0" for t in started)


def _flatten(rows: Sequence[Sequence[Any]]) -> list[Any]:
    return [value for row in rows for value in row]


class Transitions:
    """Builds the calls for one engine (key prefix, clock, limits)."""

    def __init__(
        self,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
        limits: Limits | None = None,
        cluster: bool = False,
    ):
        self.keys = Keys(prefix, cluster)
        self.clock = clock or SystemClock()
        self.limits = limits or Limits()

    def queue(self, name: str) -> QueueKeys:
        return self.keys.queue(name)

    def script_context(self, q: QueueKeys, actor: str) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV that every transition script starts with (``new_context`` in ``lua/_lib.lua``); public for
        the scripts of groups and workflows, built outside this module."""
        keys = [q.type_counts, q.events]
        args = [q.task_prefix, to_ms(self.clock.now()), self.limits.event_maxlen, actor]
        return keys, args

    def transition(
        self,
        name: str,
        q: QueueKeys,
        actor: str,
        keys: list[str],
        args: list[Any],
        parse: Callable[[Any], Any] = _identity,
    ) -> Call:
        """The call of transition script ``name``: the context every script starts with (see ``script_context``),
        then the script's own keys and arguments."""
        context_keys, context_args = self.script_context(q, actor)
        return Call(name, script(name), context_keys + keys, context_args + args, parse)

    def _archive_limits(self, own: ArchiveLimits | None = None) -> list[Any]:
        """The archive limits of a queue's policy where it sets them, the engine-wide ones otherwise."""
        size = own.max_size if own is not None and own.max_size is not None else self.limits.archive_max_size
        age = own.max_age if own is not None and own.max_age is not None else self.limits.archive_max_age
        return [size, to_ms(age)]

    def _counters(self, q: QueueKeys, *names: str) -> list[str]:
        day = utc_day(self.clock.now())
        keys: list[str] = []
        for name in names:
            keys += [q.processed, q.processed_on(day)] if name == "processed" else [q.failed, q.failed_on(day)]
        return keys

    def _daily_counters(self, q: QueueKeys) -> list[str]:
        """Every daily counter of ``q`` that may still exist (they expire DAY_COUNTER_TTL after their day). A
        deleted queue loses them with its totals: left behind, a queue of the same name used again the same day
        read more processed today than in total."""
        now = self.clock.now()
        days = [utc_day(now - n * 86400) for n in range(DAY_COUNTER_TTL // 86400 + 1)]
        return [key for day in days for key in (q.processed_on(day), q.failed_on(day))]

    # -- producers ---------------------------------------------------------------------------------------------

    def enqueue(
        self,
        queue: str,
        items: Sequence[Placement],
        actor: str = "",
        barrier: str = "",
        *,
        refusal_as_reply: bool = False,
    ) -> Call:
        """``barrier``: the id of an ``enqueue_many`` whose calls are sent one behind the other without waiting
        (see ``lua/enqueue.lua``). The reply: whether the queue is new; a refused task raises its named error
        (``DuplicateTaskError``, ``TaskIdConflictError``), or with ``refusal_as_reply`` (the producer's flows, which
        send the other tasks again or report what was enqueued before it) is the ``Refusal`` itself."""
        q = self.queue(queue)
        rows = [
            (
                p.message.id,
                p.message.type,
                p.encoded_options or p.message.encode_options(),
                p.message.payload,
                p.process_at_ms,
                p.unique_key,
                p.unique_ttl_ms,
            )
            for p in items
        ]
        keys = [q.pending, q.scheduled, q.barrier(barrier)] if barrier else [q.pending, q.scheduled]
        fresh = "1" if all(p.fresh_id for p in items) else "0"
        parse = enqueued if refusal_as_reply else partial(enqueued_or_refused, items, "enqueue")
        return self.transition("enqueue", q, actor, keys, [fresh, *_flatten(rows)], parse)

    # -- workers -----------------------------------------------------------------------------------------------

    def dequeue(
        self,
        queue: str,
        k: int,
        lease_seconds: float,
        worker: str,
        token_prefix: str,
        cap: int = 0,
        rate: RateLimit | None = None,
    ) -> Call:
        """Up to ``k`` tasks, as a ``Dequeued``. With a concurrency ``cap`` (> 0), never more than cap active in the
        queue at once; with a ``rate`` limit, never more than its limit started in any period. Both are counted
        over every worker and consumer of the queue."""
        q = self.queue(queue)
        expiry = to_ms(self.clock.now() + lease_seconds)
        rate = rate or RateLimit()
        return self.transition(
            "dequeue",
            q,
            worker,
            [q.pending, q.lease, q.paused, q.starts],
            [expiry, token_prefix, k, cap, rate.limit, to_ms(rate.period)],
            _dequeued,
        )

    def extend_leases(self, queue: str, leases: Sequence[tuple[str, str]], lease_seconds: float) -> Call:
        q = self.queue(queue)
        expiry = to_ms(self.clock.now() + lease_seconds)
        return Call(
            "extend_lease",
            script("extend_lease"),
            [q.lease],
            [q.task_prefix, expiry] + _flatten(leases),
            lambda reply: [i.decode() for i in reply],
        )

    def _then(self, q: QueueKeys, then: FetchNext | None) -> tuple[list[str], list[Any]]:
        """The keys and arguments with which an ack script leases after it (``lease_after_ack`` in
        ``lua/_lib.lua``); k and ahead 0 when it leases nothing."""
        keys = [q.pending, q.paused, q.starts]
        if then is None or not _fetches(then):
            return keys, [0, 0, "", "", 0, 0, 0]
        rate = then.rate or RateLimit()
        expiry = to_ms(self.clock.now() + then.lease_seconds)
        return keys, [then.k, then.ahead, expiry, then.token_prefix, then.cap, rate.limit, to_ms(rate.period)]

    def done(
        self,
        queue: str,
        leases: Sequence[tuple[str, str]],
        worker: str,
        started: Sequence[float] = (),
        then: FetchNext | None = None,
    ) -> Call:
        """``started``: when each attempt's handler started (epoch seconds, 0 unknown), in the order of ``leases``,
        for the task's timeline; empty when the caller does not know. Returns one status per task; with ``then``
        (fetch-on-ack), an ``Acked`` with the tasks leased as well."""
        q = self.queue(queue)
        then_keys, then_args = self._then(q, then)
        return self.transition(
            "done",
            q,
            worker,
            [q.lease] + self._counters(q, "processed") + then_keys,
            [DAY_COUNTER_TTL, _start_times(started)] + then_args + _flatten(leases),
            _acked if _fetches(then) else _statuses,
        )

    def complete(
        self,
        queue: str,
        leases: Sequence[tuple[str, str, float]],
        worker: str,
        started: Sequence[float] = (),
        then: FetchNext | None = None,
    ) -> Call:
        """``leases`` holds (id, token, retention seconds); ``started`` and ``then`` as in ``done``."""
        q = self.queue(queue)
        rows = [(task_id, token, to_ms(retention)) for task_id, token, retention in leases]
        then_keys, then_args = self._then(q, then)
        return self.transition(
            "complete",
            q,
            worker,
            [q.lease, q.completed] + self._counters(q, "processed") + then_keys,
            [DAY_COUNTER_TTL, _start_times(started)] + then_args + _flatten(rows),
            _acked if _fetches(then) else _statuses,
        )

    def _failure(self, q: QueueKeys, failure: Failure | None, grouped: bool) -> tuple[list[str], list[Any]]:
        """The keys and arguments ``record_failure`` (lua/_lib.lua) reads, after each script's own: the traceback
        of ``failure``, and with ``grouped`` its error group."""
        keys = [q.errors, q.errors_seen]
        tb = bounded(failure.traceback) if failure is not None else ""
        fp, label = (failure.fingerprint, failure.label) if failure is not None and grouped else ("", "")
        limits = [self.limits.error_groups_max, to_ms(self.limits.error_groups_max_age)]
        return keys, [tb, fp, label] + limits

    def retry(
        self,
        queue: str,
        task_id: str,
        token: str,
        retry_at: float,
        error: str,
        *,
        worker: str,
        is_failure: bool = True,
        expired_before: float | None = None,
        started: float = 0.0,
        failure: Failure | None = None,
    ) -> Call:
        """``started``: when the attempt's handler started (epoch seconds; 0 unknown), for the timeline.
        ``failure``: what the handler raised, for the task's traceback and, when it counts as a failure, its error
        group; None (a lease that expired) keeps neither."""
        q = self.queue(queue)
        own = [to_ms(retry_at), error, "1" if is_failure else "0"]
        ended = (task_id, token, expired_before, started)
        return self._failed_attempt("retry", q, q.retry, worker, ended, own, failure, grouped=is_failure)

    def archive(
        self,
        queue: str,
        task_id: str,
        token: str,
        error: str,
        *,
        worker: str,
        expired_before: float | None = None,
        archive_limits: ArchiveLimits | None = None,
        started: float = 0.0,
        failure: Failure | None = None,
    ) -> Call:
        """``started`` and ``failure`` as in ``retry``."""
        q = self.queue(queue)
        own = [error, *self._archive_limits(archive_limits)]
        ended = (task_id, token, expired_before, started)
        return self._failed_attempt("archive", q, q.archived, worker, ended, own, failure, grouped=True)

    def _failed_attempt(
        self,
        name: str,
        q: QueueKeys,
        target: str,
        worker: str,
        ended: tuple[str, str, float | None, float],
        own: list[Any],
        failure: Failure | None,
        *,
        grouped: bool,
    ) -> Call:
        """The call of ``retry`` or ``archive``, which end a leased attempt alike: the task leaves the lease for
        ``target``, counts as processed and failed, and keeps its failure. ``ended`` is (task id, lease token, the
        fence of a recovered lease or None, the handler's start or 0); ``own`` the script's own arguments, which
        come between the token and the fence."""
        task_id, token, expired_before, started = ended
        fence = "" if expired_before is None else to_ms(expired_before)
        failure_keys, failure_args = self._failure(q, failure, grouped)
        return self.transition(
            name,
            q,
            worker,
            [q.lease, target] + self._counters(q, "processed", "failed") + failure_keys,
            [DAY_COUNTER_TTL, task_id, token, *own, fence, to_ms(started) if started else ""] + failure_args,
        )

    def requeue(self, queue: str, leases: Sequence[tuple[str, str]], worker: str) -> Call:
        q = self.queue(queue)
        return self.transition("requeue", q, worker, [q.lease, q.pending], _flatten(leases), _statuses)

    def expire(self, queue: str, task_id: str, token: str, reason: str, worker: str) -> Call:
        """Drop a leased task whose deadline passed before anyone ran it (see ``lua/expire.lua``)."""
        q = self.queue(queue)
        return self.transition("expire", q, worker, [q.lease], [task_id, token, reason])

    def drop_lease(self, queue: str, task_id: str) -> Call:
        q = self.queue(queue)
        return Call("drop_lease", script("drop_lease"), [q.lease], [q.task_prefix, task_id])

    def write_result(self, queue: str, task_id: str, token: str, field_name: str, value: bytes) -> Call:
        q = self.queue(queue)
        return Call(
            "write_result", script("write_result"), [q.lease], [q.task_prefix, task_id, token, field_name, value]
        )

    # -- background maintenance ---------------------------------------------------------------------------------

    def forward(self, queue: str, state: str, actor: str = "forwarder", limit: int = PERIODIC_LIMIT) -> Call:
        q = self.queue(queue)
        return self.transition("forward", q, actor, [q.state_key(state), q.pending], [state, limit], int)

    def delete_expired(self, queue: str, actor: str = "janitor", limit: int = PERIODIC_LIMIT) -> Call:
        q = self.queue(queue)
        return self.transition("delete_expired", q, actor, [q.completed], [limit], int)

    # -- operators ---------------------------------------------------------------------------------------------

    def pause(self, queue: str, actor: str, paused: bool = True) -> Call:
        q = self.queue(queue)
        name = "pause" if paused else "unpause"
        keys = [q.paused, q.events] + ([] if paused else [q.pending])
        return Call(name, script(name), keys, [to_ms(self.clock.now()), self.limits.event_maxlen, actor])

    def delete_task(self, queue: str, task_id: str, actor: str) -> Call:
        q = self.queue(queue)
        return self.transition(
            "delete_task", q, actor, [q.pending, q.scheduled, q.retry, q.archived, q.completed, q.waiting], [task_id]
        )

    def run_task(self, queue: str, task_id: str, actor: str, mark: OperatorMark | None = None) -> Call:
        """``mark``: the operator's trace context to record (``operator_trace``), written only if the task's
        options are still the ones it was built from."""
        q = self.queue(queue)
        keys = [q.pending, q.scheduled, q.retry, q.archived, q.waiting]
        marked = mark.script_args() if mark is not None else NO_MARK
        return self.transition("run_task", q, actor, keys, [task_id, self._record_ms(), *marked])

    def edit_task(
        self,
        queue: str,
        task_id: str,
        payload: bytes,
        options: bytes,
        actor: str,
        task_type: str = "",
        trace_id: str = "",
    ) -> Call:
        """``trace_id``: that of the operator's context ``options`` carry, for the edit's event."""
        q = self.queue(queue)
        args = [task_id, payload, options, task_type, self._record_ms(), trace_id]
        return self.transition("edit_task", q, actor, [q.pending, q.retry, q.archived], args)

    def cancel_task(self, queue: str, task_id: str, channel: str, message: str, mark: OperatorMark) -> Call:
        """A cancel request that records the operator's trace context on the active task (``lua/cancel_task.lua``);
        replies how many workers heard it."""
        q = self.queue(queue)
        return self.transition("cancel_task", q, "", [q.lease], [task_id, *mark.script_args(), channel, message], int)

    def _record_ms(self) -> int:
        """How long a task an operator acts on keeps its record once deleted (ms; see mark_kept in _lib.lua)."""
        return max(0, to_ms(self.limits.task_record_seconds))

    def archive_task(self, queue: str, task_id: str, actor: str, archive_limits: ArchiveLimits | None = None) -> Call:
        q = self.queue(queue)
        return self.transition(
            "archive_task",
            q,
            actor,
            [q.pending, q.scheduled, q.retry, q.archived],
            [task_id] + self._archive_limits(archive_limits),
        )

    def delete_all(self, queue: str, state: str, actor: str, chunk: int = BULK_CHUNK) -> Call:
        q = self.queue(queue)
        return self.transition("delete_all", q, actor, [q.state_key(state)], [state, chunk], int)

    def run_all(self, queue: str, state: str, actor: str, chunk: int = BULK_CHUNK) -> Call:
        q = self.queue(queue)
        return self.transition("run_all", q, actor, [q.state_key(state), q.pending], [state, chunk], int)

    def archive_all(
        self,
        queue: str,
        state: str,
        actor: str,
        chunk: int = BULK_CHUNK,
        *,
        archive_limits: ArchiveLimits | None = None,
    ) -> Call:
        q = self.queue(queue)
        return self.transition(
            "archive_all",
            q,
            actor,
            [q.state_key(state), q.archived],
            [state, chunk] + self._archive_limits(archive_limits),
            int,
        )

    def delete_queue(self, queue: str, force: bool) -> Call:
        q = self.queue(queue)
        keys = [
            q.pending,
            q.lease,
            q.scheduled,
            q.retry,
            q.archived,
            q.completed,
            q.groups,
            q.aggregation_sets,
            q.waiting,
            q.workflows,
            q.paused,
            q.processed,
            q.failed,
            q.type_counts,
            q.events,
            q.starts,
            q.errors,
            q.errors_seen,
        ] + self._daily_counters(q)
        return Call("delete_queue", script("delete_queue"), keys, [q.task_prefix, "1" if force else "0"])
