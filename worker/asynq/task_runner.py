"""Runs asynq tasks: one dequeue script call fetches a task for each free handler slot, the handlers run on
taskq's executors, and each outcome is written as asynq's processor writes it (processor.go).

- The handler's deadline is the earlier of now + its timeout and the task's deadline (30 minutes when it has
  neither). A task past it, a cancel (``asynq:cancel``) and a lost lease end the attempt from outside: the handler
  is asked to stop (``task.cancelled``; an async handler is cancelled), and the outcome is written at once, as Go
  answers its context's end without waiting for the goroutine.
- Success: ``done``, or ``mark_complete`` when the task has a retention. Failure: ``retry`` after the handler's
  retry delay (asynq's default backoff unless its registration gives one), or ``archive`` when the retries are
  spent or the handler raised ``SkipRetry``; ``RetryWithoutFailure`` retries without counting a failure.
- Nothing is written once this worker's lease has run out: the task belongs to the recoverer then (asynq's rule).
  A write that Redis did not take is retried by the syncer until the lease runs out.
- Shutdown: no more fetches; the running tasks get the shutdown timeout, then go back to pending (``requeue``).

Threads: the fetch thread starts attempts; handler threads and the event loop end them; the heartbeat, the
deadline watch and the cancel listener end them from outside. ``running`` is guarded by ``_lock``; an attempt
ends once (``Attempt.claim``), whoever ends it first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack

from taskq.queues.engine import EngineError, RedisUnavailableError, Registry, Task, TaskMessage
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore, Dequeued
from taskq.queues.engine.broker import KeptConnection
from taskq.queues.engine.clock import Clock
from taskq.queues.engine.errors import FormatUnsupportedError
from taskq.queues.engine.handlers import Handler
from taskq.queues.engine.message import DEFAULT_TIMEOUT
from taskq.queues.engine.transitions import Call, Leased
from taskq.worker.attempt import Attempt, Outcome
from taskq.worker.capacity import Capacity
from taskq.worker.executors import LoopThread, ThreadPool
from taskq.worker.ordering import QueueOrder
from taskq.worker.processor import no_handler_message

from .timings import Timings

log = logging.getLogger("taskq.worker.asynq")

#: The errors Go's context gives a handler that ran out of time or was cancelled: the last error asynq writes.
DEADLINE_EXCEEDED = "context deadline exceeded"
CANCELED = "context canceled"


class ContextEnded(Exception):
    """The attempt's context ended from outside (deadline, cancel): its message is Go's ``ctx.Err()``."""


class AsynqAttempt(Attempt):
    """taskq's attempt of one asynq task, with the message as dequeued (asynq's transitions take it back)."""

    def __init__(self, message: WireTask, task: Task, handler: Handler | None, deadline: float, now: float) -> None:
        leased = Leased(message.id, message.type.encode(), b"", message.payload, message.retried, "")
        super().__init__(leased, message.queue, task, handler, deadline, now)
        self.message = message


class ResultWriter:
    """What a handler's ``task.write_result`` reaches: asynq's ``result`` field. asynq keeps no progress and no
    journal, so those are refused, naming what is missing."""

    def __init__(self, store: AsynqWorkerStore, queue: str, task_id: str) -> None:
        self.store, self.queue, self.task_id = store, queue, task_id

    def write(self, field: str, value: bytes) -> None:
        if field != "result":
            raise FormatUnsupportedError(f"asynq's task format has no {field}: only the result is kept", op=field)
        self.store.write_result(self.queue, self.task_id, value)


def task_message(message: WireTask) -> TaskMessage:
    """The asynq message as the ``TaskMessage`` a handler's ``Task`` reads (type, payload, queue, retries, timeout,
    deadline, retention, headers)."""
    return TaskMessage(
        message.id,
        message.type,
        message.payload,
        message.queue,
        max_retry=message.retry,
        timeout=float(message.timeout) if message.timeout else None,
        deadline_ms=message.deadline * 1000,
        retention=float(message.retention),
        headers=dict(message.headers),
    )


def handler_deadline(message: WireTask, now: float) -> float:
    """asynq's computeDeadline: the earlier of now + timeout and the deadline; 30 minutes when neither is set."""
    if not message.timeout and not message.deadline:
        return now + DEFAULT_TIMEOUT
    ends = [now + message.timeout if message.timeout else None, float(message.deadline) or None]
    return min(t for t in ends if t is not None)


class TaskRunner:
    """Fetches, runs and ends asynq tasks; see the module's docstring."""

    def __init__(
        self,
        store: AsynqWorkerStore,
        registry: Registry,
        order: QueueOrder,
        concurrency: int,
        timings: Timings,
        clock: Clock,
        worker_id: str,
        resync: Callable[[Callable[[], None], float, str], None],
    ) -> None:
        self.store, self.registry, self.order = store, registry, order
        self.timings, self.clock, self.worker_id = timings, clock, worker_id
        self.resync = resync  # hands a write Redis did not take to the syncer, until the lease's end
        self.capacity = Capacity(concurrency)
        self.pool = ThreadPool(concurrency, self.run_sync)
        self.loop = LoopThread(self.run_async)
        self._lock = threading.Lock()
        self.running: dict[tuple[str, str], AsynqAttempt] = {}  # (queue, task id) -> attempt; guarded by _lock
        self._connections = threading.local()  # each handler thread's own kept connection (see _finish)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False  # the fetch thread's own: Redis unreachable, logged once

    # -- fetching ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._fetch_loop, name="asynq-fetch", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _fetch_loop(self) -> None:
        while not self._stopping.is_set():
            free = self.capacity.wait_free(0.5)
            if free <= 0:
                continue
            dequeued = self._dequeue(free)
            if not dequeued:
                # asynq's idle poll: half the interval plus a random part of it, so idle servers do not beat together
                idle = self.timings.idle_wait
                self._stopping.wait(idle / 2 + random.uniform(0, idle))
                continue
            self.capacity.take(len(dequeued))
            for one in dequeued:
                attempt = self._start(one)
                if attempt is not None:
                    self.pool.submit(attempt)

    def _dequeue(self, free: int) -> list[Dequeued]:
        """A task for each free slot, as far as the queues have them. asynq draws a queue order for each dequeue, so
        each slot gets its own draw; the slots that drew the same order share one call (one round trip per queue
        tried), so strict priority, or a single queue, still fetches every slot in one."""
        draws = Counter(tuple(self.order.next()) for _ in range(free))
        dequeued: list[Dequeued] = []
        try:
            for order, count in draws.items():
                dequeued += self.store.dequeue_many(list(order), count, self.timings.lease)
        except RedisUnavailableError as exc:
            if not self._failing:
                log.warning("dequeue: %s; retrying", exc)
            self._failing = True
            return dequeued  # those already leased run now, rather than wait out their lease
        if self._failing:
            log.info("dequeue: Redis is back")
        self._failing = False
        return dequeued

    def _start(self, dequeued: Dequeued) -> AsynqAttempt | None:
        """Register the attempt of a task dequeued for a slot already taken, so the heartbeat extends its lease
        from now on. Returns it when its handler is sync, for the caller to run (the fetch thread hands it to the
        pool; a handler thread runs it itself); an async one goes to the event loop, and one that cannot start is
        ended at once and its slot given back."""
        message = dequeued.message
        now = self.clock.now()
        writer = ResultWriter(self.store, message.queue, message.id)
        task = Task(task_message(message), message.retried, writer, worker_id=self.worker_id)
        handler = self.registry.route(message.type)
        attempt = AsynqAttempt(message, task, handler, handler_deadline(message, now), now)
        attempt.lease_until = dequeued.lease_expires_at
        with self._lock:
            self.running[(message.queue, message.id)] = attempt
        if handler is None:
            self.settle(attempt, attempt.failure(LookupError(no_handler_message(message.type)), now))
            self.capacity.release()
        elif attempt.deadline is not None and attempt.deadline <= now:
            self.settle(attempt, self._ended(attempt, DEADLINE_EXCEEDED))  # as Go checks ctx before it starts
            self.capacity.release()
        elif handler.is_async:
            self.loop.submit([attempt])
        else:
            return attempt
        return None

    # -- running -------------------------------------------------------------------------------------------------

    def _enter_middleware(self, stack: ExitStack, task: Task) -> None:
        for middleware in self.registry.middleware:
            stack.enter_context(middleware(task))

    def run_sync(self, attempt: Attempt) -> None:
        """Run a sync handler's attempt, then, on this thread and in the same slot, each sync task fetched in the
        round trip that wrote the previous one's outcome (see ``_finish``)."""
        assert isinstance(attempt, AsynqAttempt)
        current: AsynqAttempt | None = attempt
        while current is not None:
            current = self._finish(current, self._outcome(current))

    def _outcome(self, attempt: AsynqAttempt) -> Outcome:
        assert attempt.handler is not None
        try:
            with ExitStack() as stack:
                self._enter_middleware(stack, attempt.task)
                attempt.handler(attempt.task)
        except Exception as exc:
            return self._failed(attempt, exc)
        return Outcome("success")

    def _finish(self, attempt: AsynqAttempt, outcome: Outcome) -> AsynqAttempt | None:
        """End a sync attempt on its handler thread and refill its slot: the outcome is written together with the
        dequeue of one task from the queue the order puts first, in one round trip on the thread's own
        connection. Returns the next attempt for this thread to run; None when the slot is given back (nothing
        fetched, the worker stopping, an outcome that cannot go with a fetch) or passed on (the task fetched is
        async, or could not start)."""
        refill = None if self._stopping.is_set() else self.order.first()
        if refill is None or not self._claim(attempt, outcome):
            self.settle(attempt, outcome)
            self.capacity.release()
            return None
        write = self._writer(attempt.message, outcome)
        if write is None or self.clock.now() > attempt.lease_until:
            self._write(attempt, outcome, write)
            self.capacity.release()
            return None
        try:
            error, dequeued = self.store.write_and_dequeue(write, refill, self.timings.lease, self._connection())
        except EngineError as exc:  # the write is refused before it is sent (e.g. a queue name): as alone
            error, dequeued = exc, []
        if error is not None:
            self._write_failed(attempt, outcome, write, error)
        if not dequeued:
            self.capacity.release()
            return None
        return self._start(dequeued[0])

    def _connection(self) -> KeptConnection:
        """This handler thread's own connection for its outcomes and refills: a checkout from the pool and back on
        every task cost the worker a good part of its time. At most one per handler thread."""
        kept: KeptConnection | None = getattr(self._connections, "kept", None)
        if kept is None:
            kept = self._connections.kept = self.store.keep_connection()
        return kept

    async def run_async(self, attempt: Attempt) -> None:
        assert isinstance(attempt, AsynqAttempt) and attempt.handler is not None
        outcome = Outcome("success")
        try:
            if not attempt.claimed:  # ended from outside before the loop got to it: do not start it
                with ExitStack() as stack:
                    self._enter_middleware(stack, attempt.task)
                    await attempt.handler(attempt.task)
        except asyncio.CancelledError:
            outcome = Outcome("drop")  # whoever cancelled it has ended the attempt already
        except Exception as exc:
            outcome = self._failed(attempt, exc)
        self.settle(attempt, outcome)
        self.capacity.release()

    def _failed(self, attempt: AsynqAttempt, exc: Exception) -> Outcome:
        outcome = attempt.failure(exc, self.clock.now())
        log.info("task %s (%s) failed: %s", attempt.id, attempt.task.type, outcome.error)
        return outcome

    def _ended(self, attempt: AsynqAttempt, why: str) -> Outcome:
        """The outcome of an attempt whose context ended from outside, with Go's error text as its last error."""
        return dataclasses.replace(attempt.failure(ContextEnded(why), self.clock.now()), error=why)

    # -- ending --------------------------------------------------------------------------------------------------

    def settle(self, attempt: AsynqAttempt, outcome: Outcome) -> bool:
        """End the attempt with ``outcome`` unless something ended it first; True when this call ended it."""
        if not self._claim(attempt, outcome):
            return False
        self._write(attempt, outcome, self._writer(attempt.message, outcome))
        return True

    def _claim(self, attempt: AsynqAttempt, outcome: Outcome) -> bool:
        """Take the attempt's end for ``outcome`` unless something ended it first; True when this call took it."""
        if not attempt.claim():
            return False
        with self._lock:
            if self.running.get((attempt.queue, attempt.id)) is attempt:
                del self.running[(attempt.queue, attempt.id)]
        attempt.ended_as = outcome.kind
        return True

    def _end_from_outside(self, attempt: AsynqAttempt, outcome: Outcome) -> bool:
        if not self.settle(attempt, outcome):
            return False
        attempt.interrupt()
        return True

    def _write(self, attempt: AsynqAttempt, outcome: Outcome, write: Call | None) -> None:
        """Write ``outcome`` (the transition ``write``; None: nothing to write), unless the lease has run out."""
        if write is None:
            return
        if self.clock.now() > attempt.lease_until:
            log.warning("task %s: lease expired; the recoverer will %s it", attempt.id, outcome.kind)
            return
        try:
            self.store.write(write)
        except EngineError as exc:
            self._write_failed(attempt, outcome, write, exc)

    def _write_failed(self, attempt: AsynqAttempt, outcome: Outcome, write: Call, error: EngineError) -> None:
        """Redis not reached: the syncer writes it again until the lease's end. Refused: the task is no longer
        active (deleted by an operator, or recovered), and there is nothing to write."""
        if isinstance(error, RedisUnavailableError):
            log.warning("task %s: %s; the syncer will write its %s", attempt.id, error, outcome.kind)
            self.resync(lambda: self.store.write(write), attempt.lease_until, f"task {attempt.id}: {outcome.kind}")
        else:
            log.warning("task %s: %s not written: %s", attempt.id, outcome.kind, error)

    def _writer(self, message: WireTask, outcome: Outcome) -> Call | None:
        """The store's transition that writes ``outcome``, or None when nothing is written (a lost lease, or a
        message the store refuses: it names no queue or no task)."""
        try:
            return self._transition(message, outcome)
        except EngineError as exc:
            log.warning("task %s: %s not written: %s", message.id, outcome.kind, exc)
            return None

    def _transition(self, message: WireTask, outcome: Outcome) -> Call | None:
        store = self.store
        if outcome.kind == "success":
            return store.complete_call(message) if message.retention > 0 else store.done_call(message)
        if outcome.kind == "retry":
            return store.retry_call(message, outcome.retry_at, outcome.error, outcome.is_failure)
        if outcome.kind == "archive":
            return store.archive_call(message, outcome.error)
        if outcome.kind == "requeue":
            return store.requeue_call(message)
        return None

    # -- from outside: the deadline watch, the cancel listener, the heartbeat, shutdown --------------------------

    def snapshot(self) -> list[AsynqAttempt]:
        with self._lock:
            return list(self.running.values())

    def expire_deadlines(self) -> None:
        now = self.clock.now()
        for attempt in self.snapshot():
            if attempt.deadline is not None and attempt.deadline <= now:
                if self._end_from_outside(attempt, self._ended(attempt, DEADLINE_EXCEEDED)):
                    log.info("task %s: deadline exceeded", attempt.id)

    def cancel(self, task_id: str) -> bool:
        """An operator's cancel (``asynq:cancel``): ends the running attempt of ``task_id``, if this worker runs it."""
        for attempt in self.snapshot():
            if attempt.id == task_id and self._end_from_outside(attempt, self._ended(attempt, CANCELED)):
                log.info("task %s: cancelled", task_id)
                return True
        return False

    def lease_expired(self, attempt: AsynqAttempt) -> None:
        """The heartbeat could not extend the lease in time: stop the attempt and write nothing (the recoverer of
        any server takes the task), as asynq's processor does."""
        if self._end_from_outside(attempt, Outcome("drop")):
            log.warning("task %s: lease expired; the attempt was stopped and writes nothing", attempt.id)

    def stop(self, shutdown_timeout: float) -> None:
        """No more fetches; wait up to ``shutdown_timeout`` for the running tasks, then requeue the rest."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        if not self.capacity.wait_idle(shutdown_timeout):
            left = self.snapshot()
            log.warning("shutdown timeout: requeueing %d unfinished task(s)", len(left))
            for attempt in left:
                self._end_from_outside(attempt, Outcome("requeue"))
        self.pool.stop()
        self.loop.stop()
