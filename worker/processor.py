"""The processor: fetches tasks (several per round trip), runs each on the right executor within the
concurrency limit, and hands every outcome to the acker. It owns the attempts in flight.

No fixed sleeps on the hot path: when every queue is empty the fetch thread waits on an event that the
subscriber sets as soon as a pending list gets its first task, so an idle worker starts new work within
milliseconds (asynq sleeps a second). A queue at its rate limit is left alone until the time the dequeue script
named for its next start, and an idle fetch thread sleeps no longer than until the first such time, so a
rate-limited queue neither spins the worker nor waits a whole idle period once its window admits a start.

A small prefetch keeps the handlers busy while the next batch is on its way: besides the free slots, a fetch
takes up to ``prefetch`` more tasks, which wait here, leased, until a slot frees, and once those run the next
ones are fetched while the handlers work. Without it each dequeue takes only as many tasks as there are free
slots, and the handlers idle through every round trip. The tasks that wait are bounded by ``prefetch``, come
only from queues without a concurrency cap or rate limit (both count leased tasks, so a capped queue is never
fetched beyond its free slots), are in ``inflight`` so the heartbeat extends their leases and a cancel finds
them, start their timeout when they start, and are requeued at once on shutdown and on an operator's quiet.

Fetch-on-ack: a thread whose handler succeeded, with no prefetched attempt to take over, hands its slot to the
acker rather than freeing it, and the script that acknowledges the success leases the slot's next task from the same
queue (one script call per task instead of a dequeue and an ack; see worker/acker.py). Only when the queue is the
one this worker's order would try first (a weighted draw, or the top priority when strict), so weighted and strict
order hold as for the fetch thread, and only while the worker neither stops nor is quiet. The script applies the
queue's pause, cap and rate limit exactly as dequeue, and a stale ack leases nothing; a slot the ack does not fill
goes back to the fetch thread. Failures (retry, archive) free their slot as before, and the prefetch stays the
fetch thread's.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Generator
from typing import Any

from taskq.queues.engine import Handler, Registry, Task, TaskCancelledError, TaskMessage
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.transitions import Call, Dequeued, FetchNext, Leased

from .attempt import Attempt, Outcome
from .attempt_tracing import AttemptTracing
from .capacity import Capacity
from .config import WorkerConfig
from .executors import LoopThread, ThreadPool
from .handler_calls import HandlerCalls
from .metrics import WorkerMetrics
from .ordering import QueueOrder
from .outbox import Outbox
from .process_pool import ProcessPool
from .queueset import QueueSet
from .resting import RestingQueues
from .spark import SparkRunner

log = logging.getLogger("taskq.worker.processor")

# Prefetch only while handlers take less than this on average: then a round trip is a large part of a task's
# cost and a prefetched task waits about as long. Longer tasks gain nothing from it, and a task waiting here
# behind them would be a task another worker could have started.
PREFETCH_RUN_TIME = 0.05


def no_handler_message(task_type: str) -> str:
    """Why a task failed that no handler takes, and what to do: the console's task page shows it as it is."""
    return (
        f"no handler for task type {shown(task_type)}: no worker registered a handler for this type. Register one "
        f"(@handler({shown(task_type)})), check that the worker imports its module (--import, or the app's tasks.py), "
        "and check the type's spelling (an operator may correct it with Edit and run)"
    )


class ResultWriter:
    """Lets a handler write its result and progress, fenced by the attempt's lease."""

    def __init__(self, broker: Broker, queue: str, task_id: str, token: str) -> None:
        self.broker, self.queue, self.task_id, self.token = broker, queue, task_id, token

    def write(self, field: str, value: bytes) -> None:
        self.broker.run(self.broker.transitions.write_result(self.queue, self.task_id, self.token, field, value))


class Processor:
    """Fetches and runs tasks, and hands their outcomes to the acker through ``outbox``.

    Threads: the fetch thread, the handler threads (and the event loop of async handlers), the acker's thread
    (``fill_slots``, ``fetch_next``, ``forget``), the heartbeat's and the watchdog's (``snapshot``, ``lease_lost``,
    ``lease_expired``, ``interrupt``) and the subscriber's (``cancel``, ``wake``) all call into it. Each shared
    attribute below says which thread owns it or what guards it.
    """

    def __init__(
        self,
        broker: Broker,
        config: WorkerConfig,
        registry: Registry,
        outbox: Outbox,
        queues: QueueSet | None = None,
        metrics: WorkerMetrics | None = None,
        spark: SparkRunner | None = None,
        bind: Callable[[Handler], Handler] | None = None,
    ) -> None:
        self.broker = broker
        self.metrics = metrics
        self.config = config
        self.registry = registry
        # The handler this worker runs for a registered one (built-ins bound to the worker's settings: see
        # SparkSubmitter.bind); the registered one itself by default.
        self.bind = bind or (lambda registered: registered)
        self.outbox = outbox  # thread-safe: every thread that ends an attempt submits its outcome there
        self.clock = broker.clock
        self.capacity = Capacity(config.concurrency)  # thread-safe (see Capacity)
        self.queues = queues or QueueSet(config.queues)
        self.order = QueueOrder(self.queues, config.strict)
        # Keyed by (queue, task id): ids are unique within a queue only. Holds the prefetched attempts too. The
        # fetch thread and the acker's thread add (_hold) and the acker's thread removes (forget), under
        # _inflight_lock; the other threads read it without the lock, each read one dict operation (a get, or a
        # copy of the values), which CPython does whole.
        self.inflight: dict[tuple[str, str], Attempt] = {}
        self._inflight_lock = threading.Lock()
        # Prefetched attempts, leased and waiting for a slot, oldest first. The fetch thread adds to it; the fetch
        # thread and the threads whose handler just returned take from it (each popleft is atomic).
        self._ready: deque[Attempt] = deque()
        self._prefetch = config.prefetch or 0
        # Recent handler run time (seconds, moving average): prefetch only for short tasks. The handler threads
        # write it unguarded: a float store is whole, and a lost update only nudges a heuristic.
        self._run_time = 0.0
        self.wake = threading.Event()
        self.pool = ThreadPool(config.concurrency, self.run_sync)
        self.loop = LoopThread(self.run_async)
        # --pool process: every handler but Spark ones (they need the worker's session) runs in a child process.
        self.processes = (
            ProcessPool(
                config.concurrency, registry, self._finish, self.write_field, self.clock.now, config.max_tasks_per_child
            )
            if config.pool == "process"
            else None
        )
        self.spark = spark or SparkRunner(config.spark)  # the session of handlers with spark=True (worker/spark.py)
        self.calls = HandlerCalls(registry, self.spark, self.clock)
        self.tracing = AttemptTracing(config.redaction)  # each attempt's span, once an SDK records
        self.leases_expired = 0  # attempts stopped because their lease ran out unextended: the watchdog's thread only
        self._stop = threading.Event()
        self.quieted = threading.Event()  # an operator's quiet: fetch nothing more, run what is here
        # Numbers the lease tokens of each dequeue; the fetch thread and the acker's thread draw from it (next() on
        # a count is one call into C, whole under the GIL).
        self._calls = itertools.count(1)
        # Queues whose rate limit admits no start yet: the fetch thread and the acker's thread record the windows
        # their calls were told of (see RestingQueues for how it is shared).
        self._resting = RestingQueues()
        self._thread = threading.Thread(target=self._fetch_loop, name="processor", daemon=True)

    def start(self) -> None:
        if self.processes is not None:
            self.processes.start()
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the fetch loop runs (for the health endpoint)."""
        return self._thread.is_alive()

    def quiet(self) -> None:
        """Fetch no more tasks and start none of those fetched ahead (the fetch thread gives them back to their
        queues, as shutdown does: a quiet worker is usually about to go, and another worker can run them now);
        the running ones finish."""
        self.quieted.set()
        self.wake.set()

    def stop_fetching(self) -> None:
        self._stop.set()
        self.wake.set()
        if self._thread.ident is not None:  # not started when the process pool failed to start
            self._thread.join(10)

    # -- fetching ----------------------------------------------------------------------------------------------

    def _fetch_loop(self) -> None:
        failing = False
        while not self._stop.is_set():
            free = self.capacity.wait_free(timeout=0.5)  # no free slot either after a nudge: fetch ahead
            if self._stop.is_set():
                continue
            if self.quieted.is_set():
                # Here, on the one thread that fetches and starts, so none starts while they go back.
                if given := self.requeue_ready():
                    log.info("quiet: requeued %d task(s) fetched ahead that had not started", given)
                self.wake.wait(0.5)
                self.wake.clear()
                continue
            free -= self._start_ready(free)
            ahead = max(0, self._prefetch - len(self._ready)) if self._run_time < PREFETCH_RUN_TIME else 0
            failing = self._fetch_round(free, ahead, failing)

    def _fetch_round(self, free: int, ahead: int, failing: bool) -> bool:
        """Fetch for ``free`` slots and ``ahead`` tasks to wait here; returns whether fetching fails."""
        if not free and (not ahead or len(self._ready) > self._prefetch // 2):
            return failing  # enough wait here; fetch ahead once half of them have started, not one at a time
        # Clear before looking, so a wake-up published while we look is not lost.
        self.wake.clear()
        try:
            queue, leased, drained = self._dequeue(free, ahead)
        except Exception as exc:  # Redis away, or refusing (READONLY after a failover): never stop fetching
            if not failing:
                log.warning("cannot fetch: %s; retrying every second", exc)
            self._stop.wait(1.0)
            return True
        if failing:
            log.info("fetching again")
        if leased:
            self._dispatch(queue, leased, free)
        if drained and free > len(leased):
            # Every queue is empty (or limited) and slots are left: sleep until a wake-up or a limit's window
            # opens, rather than ask again at once for an empty answer. (With every slot busy it was a fetch
            # ahead: wait for a slot, then fetch as usual.)
            self.wake.wait(self._idle_wait())
        return False

    def _dequeue(self, free: int, ahead: int = 0) -> tuple[str, list[Leased], bool]:
        """``dequeue_flow`` on the blocking broker (the fetch thread)."""
        return drive(self.dequeue_flow(free, ahead), self.broker.run)  # type: ignore[no-any-return]

    def dequeue_flow(self, free: int, ahead: int = 0) -> Generator[Call, Any, tuple[str, list[Leased], bool]]:
        """Tasks of the first queue in this round's order that gives any: up to ``free``, plus up to ``ahead``
        to wait here (prefetch) from a queue without a concurrency cap or rate limit. Also whether the round
        drained every queue: each one it asked gave less than asked, and it asked them all. A flow (see
        ``taskq.queues.engine.sans_io``): the fetch thread drives it on the blocking broker, the asyncio pool on the
        asyncio one."""
        self._resting.forget_opened(self.clock.now())
        order = self.order.next()
        for n, queue in enumerate(order, 1):
            if queue in self._resting:
                continue
            limited = self.queues.cap(queue) or self.queues.rate(queue) is not None
            k = min(free + (0 if limited else ahead), self.config.fetch_batch)
            if k <= 0:
                continue
            token_prefix = f"{self.config.server_id}:{next(self._calls)}:"
            began = time.monotonic()
            leased = yield (
                self.broker.transitions.dequeue(
                    queue,
                    k,
                    self.config.lease_seconds,
                    self.config.server_id,
                    token_prefix,
                    self.queues.cap(queue),
                    self.queues.rate(queue),
                )
            )
            if self.metrics is not None:
                self.metrics.fetch_latency.observe(time.monotonic() - began)
            self._rest(queue, leased)
            if leased:
                return queue, leased, len(leased) < k and n == len(order)
        return "", [], True

    def _rest(self, queue: str, leased: Dequeued) -> None:
        """Leave a queue alone until its rate limit admits a start, when the script that leased said so."""
        if leased.limited_until is not None:
            self._resting.rest(queue, leased.limited_until)

    def _idle_wait(self) -> float:
        """How long to sleep when no queue gave work: the idle wait, or less when a rate-limited queue's window
        opens sooner. The script names only future times, so a queue it limits is never polled in a loop."""
        soonest = self._resting.soonest()
        if soonest is None:
            return self.config.idle_wait
        return max(0.0, min(self.config.idle_wait, soonest - self.clock.now()))

    def _dispatch(self, queue: str, leased: list[Leased], free: int) -> None:
        """Start up to ``free`` of the tasks just leased; the rest wait in ``_ready`` for a slot. After a quiet
        that came while they were being fetched, none starts: the next round requeues them all."""
        now = self.clock.now()
        attempts = self._hold(queue, leased, now)
        if self.quieted.is_set():
            free = 0
        self._ready.extend(attempts[free:])
        self._start(attempts[:free], now)

    def _hold(self, queue: str, leased: list[Leased], now: float) -> list[Attempt]:
        """Attempts of tasks just leased (by a fetch or by an ack), held in ``inflight`` from now on, so the heartbeat
        extends their leases and a cancel finds them, whether they start at once or wait."""
        attempts = [self._prepare(queue, item, now) for item in leased]
        with self._inflight_lock:
            for attempt in attempts:
                self.inflight[(queue, attempt.id)] = attempt
        return attempts

    def _start_ready(self, free: int) -> int:
        """Start prefetched attempts in up to ``free`` slots; returns how many slots they took. One that was
        cancelled (or lost its lease) while it waited has already been ended, and is skipped."""
        batch: list[Attempt] = []
        while len(batch) < free and (attempt := self._pop_ready()) is not None:
            if not attempt.claimed:
                batch.append(attempt)
        if batch:
            self._start(batch, self.clock.now())
        return len(batch)

    def _pop_ready(self) -> Attempt | None:
        try:
            return self._ready.popleft()
        except IndexError:
            return None

    def _continuation(self, is_async: bool) -> Attempt | None:
        """The next prefetched attempt, for the thread (or event loop) whose handler just returned: it keeps the
        slot and runs the attempt itself, with no hand-off to the fetch thread and back (each costs a wake-up and
        a wait for the GIL). Only an attempt that runs the same way (sync on a thread, or async on the loop) is
        taken; any other is left to the fetch thread, as is everything once the worker stops."""
        if self._stop.is_set() or self.quieted.is_set() or self.processes is not None:
            return None
        while (attempt := self._pop_ready()) is not None:
            if attempt.claimed:  # cancelled, or its lease lost, while it waited: already ended
                continue
            handler = attempt.handler
            if handler is None or handler.spark or handler.is_async != is_async:
                self._ready.appendleft(attempt)
                return None
            if len(self._ready) <= self._prefetch // 2:
                self.capacity.nudge()  # the fetch thread fetches ahead again
            if self.metrics is not None:
                self.metrics.started(attempt.queue, 1)
            self._begin(attempt, self.clock.now())
            return attempt
        return None

    def _start(self, attempts: list[Attempt], now: float) -> None:
        if not attempts:
            return
        self.capacity.take(len(attempts))
        self._start_in_slots(attempts, now)

    def _start_in_slots(self, attempts: list[Attempt], now: float) -> None:
        """Run attempts in slots already taken for them."""
        if self.metrics is not None:
            for queue, count in Counter(a.queue for a in attempts).items():
                self.metrics.started(queue, count)
        async_batch = []
        for attempt in attempts:
            self._begin(attempt, now)
            if attempt.handler is None:
                self._finish(attempt, self._unroutable(attempt, now))
            elif self.processes is not None and not (attempt.handler.spark or attempt.handler.in_worker):
                self.processes.submit(attempt)
            elif attempt.handler.is_async:
                async_batch.append(attempt)
            else:
                self.run_threaded(attempt)
        if async_batch:
            self.run_on_loop(async_batch)

    def run_threaded(self, attempt: Attempt) -> None:
        """Start a sync handler's attempt, in a slot taken for it."""
        self.pool.submit(attempt)

    def run_on_loop(self, attempts: list[Attempt]) -> None:
        """Start async handlers' attempts, in slots taken for them."""
        self.loop.submit(attempts)

    def _prepare(self, queue: str, item: Leased, now: float) -> Attempt:
        try:
            message = TaskMessage.decode(item.id, queue, item.type, item.payload, item.options)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            # A record this worker cannot read must not crash it, nor come back forever: archive it.
            message = TaskMessage(item.id, item.type.decode("utf-8", "replace"), item.payload, queue)
            attempt = Attempt(item, queue, Task(message, item.retried), None, None, now)
            attempt.undecodable = f"undecodable task message: {exc}"
            attempt.lease_until = now + self.config.lease_seconds
            return attempt
        writer = ResultWriter(self.broker, queue, item.id, item.token)
        task = Task(message, item.retried, writer, worker_id=self.config.server_id)
        registered = self.registry.route(message.type)
        attempt = Attempt(item, queue, task, None if registered is None else self.bind(registered), None, now)
        attempt.lease_until = now + self.config.lease_seconds
        return attempt

    def _begin(self, attempt: Attempt, now: float) -> None:
        """The attempt takes its slot now: its run time and its timeout count from here, not from when it was
        leased (a prefetched one may have waited)."""
        attempt.started, attempt.began = now, time.monotonic()
        attempt.span = self.tracing.begin(attempt)
        message = attempt.task.message
        timeout = message.effective_timeout() if attempt.handler is not None else None
        ends = [t for t in (now + timeout if timeout else None, message.deadline_ms / 1000 or None) if t]
        attempt.deadline = min(ends) if ends else None

    def _unroutable(self, attempt: Attempt, now: float) -> Outcome:
        if attempt.undecodable:
            return Outcome("archive", attempt.undecodable)
        return attempt.failure(LookupError(no_handler_message(attempt.task.type)), now)

    # -- running -----------------------------------------------------------------------------------------------

    def run_sync(self, first: Attempt) -> None:
        """Run ``first``, then the prefetched attempts this thread takes over in its slot (see _continuation)."""
        attempt: Attempt | None = first
        while attempt is not None:
            outcome = self.calls.sync(attempt)
            following = self._continuation(is_async=False)
            self._finish(attempt, outcome, keep_slot=following is not None)
            attempt = following

    async def run_async(self, attempt: Attempt) -> None:
        outcome = await self.calls.awaited(attempt)
        following = self._continuation(is_async=True)
        self._finish(attempt, outcome, keep_slot=following is not None)
        if following is not None:
            self.loop.spawn([following])  # on this loop: the task takes over the slot

    def write_field(self, attempt: Attempt, field: str, value: bytes) -> None:
        """A handler process's write_result or progress, written here with the attempt's lease token."""
        ResultWriter(self.broker, attempt.queue, attempt.id, attempt.token).write(field, value)

    def _finish(self, attempt: Attempt, outcome: Outcome, keep_slot: bool = False) -> None:
        """The handler is done (its slot is freed, unless another attempt takes it over: ``keep_slot``). Its
        outcome counts only if nothing else ended the attempt first."""
        ran = attempt.ran = time.monotonic() - attempt.began
        self._run_time += (ran - self._run_time) / 8  # a float store: no lock needed for a heuristic
        hand_over = not keep_slot and self._fills_on_ack(attempt, outcome)
        if not keep_slot and not hand_over:
            self.release_slot()
        if self.metrics is not None:
            self.metrics.finished(attempt.queue, attempt.task.type, outcome.kind, ran)
        if attempt.claim():
            attempt.holds_slot = hand_over  # before the acker can see it
            if attempt.span is not None:
                self.tracing.decided(attempt, outcome, self.clock.now())
            self.acknowledge(attempt, outcome)
        elif hand_over:  # ended from outside meanwhile: that outcome frees no slot
            self.release_slot()

    def release_slot(self) -> None:
        """A handler slot is free again."""
        self.capacity.release()

    def acknowledge(self, attempt: Attempt, outcome: Outcome) -> None:
        """Hand the outcome of an attempt whose handler returned to whoever writes it: the acker's thread here."""
        self.outbox.submit(attempt, outcome)

    # -- fetch-on-ack (see the module's docstring and worker/acker.py) -------------------------------------------

    def _fills_on_ack(self, attempt: Attempt, outcome: Outcome) -> bool:
        """Whether the slot of a finished attempt goes to the acker, for its ack to lease the slot's next task."""
        return (
            self.config.fetch_on_ack
            and outcome.kind == "success"
            and not self._stop.is_set()
            and not self.quieted.is_set()
            and attempt.queue not in self._resting
            and self.order.first() == attempt.queue
        )

    def fetch_next(self, queue: str, slots: int) -> FetchNext | None:
        """What the ack of a batch of ``queue``'s successes leases for the ``slots`` handed over with them (the
        acker's thread): a task for each, or None while the worker is quiet or stopping. Not beyond them for the
        prefetch: leasing ahead on the acker's thread too made a no-op drain slower (docs/benchmarks.md)."""
        if self._stop.is_set() or self.quieted.is_set():
            return None
        token_prefix = f"{self.config.server_id}:{next(self._calls)}:"
        k = min(slots, self.config.fetch_batch)
        return FetchNext(k, self.config.lease_seconds, token_prefix, self.queues.cap(queue), self.queues.rate(queue))

    def fill_slots(self, queue: str, leased: Dequeued, slots: int) -> None:
        """Start the tasks an ack leased in the ``slots`` handed over (never more tasks than slots), and free the
        slots left over (the acker's thread). Tasks leased while the worker went quiet or began to stop go back to
        their queue at once."""
        self._rest(queue, leased)
        now = self.clock.now()
        attempts = self._hold(queue, leased, now)
        if self._stop.is_set() or self.quieted.is_set():
            for attempt in attempts:
                if attempt.claim():
                    self.outbox.submit(attempt, Outcome("requeue"))
            attempts = []
        for _ in range(slots - len(attempts)):
            self.release_slot()
        if attempts:
            self._start_in_slots(attempts, now)

    # -- ending attempts from outside --------------------------------------------------------------------------

    def interrupt(self, attempt: Attempt, reason: BaseException, outcome: Outcome | None = None) -> bool:
        """End a running attempt now (timeout, deadline, cancel, shutdown): the handler is asked to stop and
        its eventual result is void. Returns False when the attempt had already ended."""
        if not attempt.claim():
            return False
        attempt.interrupt()
        outcome = outcome or attempt.failure(reason, self.clock.now())
        if attempt.span is not None:
            self.tracing.decided(attempt, outcome, self.clock.now())
        self.outbox.submit(attempt, outcome)
        return True

    def cancel(self, queue: str, task_id: str) -> bool:
        attempt = self.inflight.get((queue, task_id))
        if attempt is None:
            return False
        reason = TaskCancelledError("cancelled by an operator")
        outcome = attempt.failure(reason, self.clock.now())
        outcome.cause = "cancelled"
        return self.interrupt(attempt, reason, outcome)

    def lease_lost(self, attempt: Attempt) -> None:
        """Another attempt owns the task now: stop this one and write nothing."""
        if self.interrupt(attempt, TaskCancelledError("lease lost"), Outcome("drop")):
            log.warning("task %s: lease lost; the attempt was stopped and its result will be discarded", attempt.id)

    def lease_expired(self, attempt: Attempt) -> None:
        """The lease ran out because the heartbeat could not extend it (Redis unreachable): another worker may
        run the task now, so stop this attempt and write nothing, as for a lost lease."""
        if self.interrupt(attempt, TaskCancelledError("lease expired"), Outcome("drop")):
            self.leases_expired += 1
            if self.metrics is not None:
                self.metrics.lease_expired(attempt.queue)
            log.warning(
                "task %s: lease expired without being extended (is Redis reachable?); the attempt was "
                "stopped and its result will be discarded",
                attempt.id,
            )

    def forget(self, attempt: Attempt) -> None:
        """The attempt's outcome is written (or refused, or given up): it is over here, and so is its span."""
        if attempt.span is not None:
            attempt.span.end()
        # Only this attempt: a newer attempt of the same task (its lease lapsed, it came back) may be running.
        key = (attempt.queue, attempt.id)
        with self._inflight_lock:  # the look and the removal at once: the fetch thread may hold a newer attempt now
            if self.inflight.get(key) is attempt:
                del self.inflight[key]
        if self.queues.cap(attempt.queue):
            # Its lease is gone now (the acker wrote the outcome): a capped queue has a free slot, so fetch again
            # rather than after the idle wait. Uncapped queues need no wake-up: a refusal there means empty.
            self.wake.set()

    def snapshot(self) -> list[Attempt]:
        return list(self.inflight.values())

    def running(self) -> dict[str, dict[str, Any]]:
        """What the heartbeat publishes for the console's servers page (not the prefetched attempts)."""
        return {
            a.id: {
                "id": a.id,
                "type": a.task.type,
                "queue": a.queue,
                "started": int(a.started * 1000),
                "deadline": int(a.deadline * 1000) if a.deadline else None,
            }
            for a, started in self.held()
            if started
        }

    def held(self) -> list[tuple[Attempt, bool]]:
        """Every attempt this worker holds, with whether it started (False: fetched ahead, waiting for a slot)."""
        waiting = {id(a) for a in list(self._ready)}
        return [(a, id(a) not in waiting) for a in self.snapshot()]

    def requeue_ready(self) -> int:
        """Give the prefetched attempts back to their queues (shutdown, quiet): they never started. Only from the
        fetch thread, or once it has stopped."""
        given = 0
        while (attempt := self._pop_ready()) is not None:
            if attempt.claim():
                self.outbox.submit(attempt, Outcome("requeue"))
                given += 1
        return given

    def stop(self, shutdown_timeout: float) -> None:
        """Graceful stop: no new fetches, wait for running handlers, then requeue what is left."""
        self.stop_fetching()
        if self.requeue_ready():
            log.info("requeued the prefetched tasks that had not started")
        self.wait_or_requeue(shutdown_timeout)
        self.outbox.drain(timeout=5.0)
        self.pool.stop()
        self.loop.stop()
        if self.processes is not None:
            self.processes.stop()

    def wait_or_requeue(self, shutdown_timeout: float) -> bool:
        """Wait up to ``shutdown_timeout`` for the running handlers; then end those left, their tasks requeued.
        Returns whether all had finished in time."""
        if self.capacity.wait_idle(shutdown_timeout):
            return True
        left = [a for a in self.snapshot() if not a.claimed]
        log.warning("shutdown timeout: requeueing %d unfinished task(s)", len(left))
        for attempt in left:
            self.interrupt(attempt, TaskCancelledError("worker shut down"), Outcome("requeue"))
        return False
