"""The asyncio pool's processor: the fetch loop, the handlers and the writer of their outcomes are tasks of one event
loop, in a thread of its own, over one ``redis.asyncio`` connection pool. A task leased by a dequeue (or by the ack
of the task before it, fetch-on-ack) starts in one of that loop's handler slots (``slots``: a fixed set of
coroutines, not a task per attempt), its handler is awaited there, and its outcome
goes to the loop's writer (``asyncio_acker``), whose next call acknowledges it and leases the slot's next task: no
thread hand-off between fetch and ack, and no lock taken per task but the slot count's.

Everything else is the thread pool's processor, inherited: leases and their fencing tokens, the order of queues,
pause, caps and rate limits (the dequeue script's), the idle wake-up, what a fetch-on-ack may lease, and how an
attempt ends from outside. The other components keep their threads and the blocking broker, since none of them
works per task: the heartbeat extends every lease in one call per interval, the watchdog times out, the subscriber
cancels (``Attempt.interrupt`` cancels the coroutine on this loop), the acker's thread writes the outcomes they end
and the series tally, and the syncer retries what Redis did not take.

Sync and Spark handlers are allowed: they run on a pool of ``concurrency`` threads (``run_in_executor``), each in a
slot of the same count. The pool does not fetch ahead of free slots (``--prefetch`` does not apply): fetch-on-ack
keeps busy slots fed, and a dequeue for the free ones runs while the handlers do.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from taskq.queues.engine import Registry
from taskq.queues.engine.broker import AsyncBroker
from taskq.queues.engine.sans_io import drive_async

from ..acker import Acker
from ..attempt import Attempt, Outcome
from ..config import WorkerConfig
from ..processor import Processor
from .asyncio_acker import LoopAcker
from .event_loops import loop_factory
from .loop_signal import LoopSignal
from .slots import Slots

log = logging.getLogger("taskq.worker.asyncio_processor")


class AsyncioProcessor(Processor):
    """``Processor`` on one event loop. ``acker`` must be given (``attach``) before ``start``: its flow writes the
    loop's outcomes. The loop's own attributes (``_writer``, ``_tasks``, ``_freed``) are touched from the loop only;
    other threads reach it through ``wake``, ``Attempt.interrupt`` and the outbox."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As ``Processor``."""
        super().__init__(*args, **kwargs)
        self._make_loop = loop_factory(self.config.event_loop)  # a named error now, not in its thread
        self.loop.loop.close()  # the thread pool's loop for async handlers: this pool runs them on its own
        self.wake: LoopSignal = LoopSignal()  # type: ignore[assignment]
        self._freed = LoopSignal()  # a slot came free: the fetch loop may dequeue again
        self._handlers_done = LoopSignal()  # stop() saw every slot free (or gave up waiting): write, then end
        self._threads = ThreadPoolExecutor(self.config.concurrency, thread_name_prefix="handler-")
        # The sync handlers' waits on their threads; strong references: the loop keeps only weak ones.
        self._tasks: set[asyncio.Task[None]] = set()
        self._writer: LoopAcker | None = None
        self._slots: Slots | None = None  # the async handlers' slots (made on the loop)
        self.acker: Acker | None = None
        self._thread = threading.Thread(target=self._serve, name="async-handlers", daemon=True)

    def attach(self, acker: Acker) -> None:
        """The acker whose flow, counters and backlog the loop's writer uses."""
        self.acker = acker

    def _serve(self) -> None:
        with asyncio.Runner(loop_factory=self._make_loop) as runner:
            runner.run(self._main())

    async def _main(self) -> None:
        assert self.acker is not None, "attach(acker) before start()"
        for signal in (self.wake, self._freed, self._handlers_done):
            signal.bind()
        config = self.config
        broker = AsyncBroker(config.redis_url, prefix=config.prefix, clock=self.clock, limits=config.limits)
        self._writer = LoopAcker(self.acker, broker)
        writing = asyncio.create_task(self._writer.run())
        self._slots = Slots(config.concurrency, self.calls.awaited, self._finish)
        try:
            await self._fetch_loop_async(broker)
            while not self._handlers_done.is_set():
                await self._handlers_done.wait(1.0)
            await self._writer.close()
            await writing
        finally:
            self._slots.close()
            await broker.close()

    # -- fetching ------------------------------------------------------------------------------------------------

    async def _fetch_loop_async(self, broker: AsyncBroker) -> None:
        run = functools.partial(broker.run, kept=broker.keep_connection())  # one call at a time: a kept connection
        failing = False
        while not self._stop.is_set():
            if self.quieted.is_set():
                if given := self.requeue_ready():  # fetched while the quiet came: they go back unstarted
                    log.info("quiet: requeued %d task(s) fetched that had not started", given)
                await self.wake.wait(0.5)
                self.wake.clear()
                continue
            self._freed.clear()  # before counting: slots are released on this loop only, so none is missed
            free = self.capacity.size - self.capacity.busy
            if free <= 0:
                await self._freed.wait(0.5)  # every slot busy: nothing to fetch until one is freed
                continue
            self.wake.clear()  # before looking, so a wake-up published while we look is not lost
            try:
                queue, leased, drained = await drive_async(self.dequeue_flow(free), run)
            except Exception as exc:  # Redis away, or refusing: never stop fetching
                if not failing:
                    log.warning("cannot fetch: %s; retrying every second", exc)
                failing = True
                await self.wake.wait(1.0)
                continue
            if failing:
                log.info("fetching again")
                failing = False
            if leased:
                self._dispatch(queue, leased, free)
            if drained and free > len(leased):
                await self.wake.wait(self._idle_wait())

    # -- running -------------------------------------------------------------------------------------------------

    def run_threaded(self, attempt: Attempt) -> None:
        self._spawn(self._run_in_thread(attempt))

    def run_on_loop(self, attempts: list[Attempt]) -> None:
        assert self._slots is not None
        self._slots.submit(attempts)

    def _spawn(self, coroutine: Any) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run_in_thread(self, attempt: Attempt) -> None:
        """A sync (or Spark) handler, on one of the pool's threads; its slot is held until it returns, even when
        the attempt was ended meanwhile (a thread cannot be stopped: it sees ``task.cancelled``)."""
        done = asyncio.get_running_loop().run_in_executor(self._threads, self.calls.sync, attempt)
        try:
            outcome = await asyncio.shield(done)
        except asyncio.CancelledError:
            await asyncio.wait([done])
            outcome = Outcome("drop")
        self._finish(attempt, outcome)

    def release_slot(self) -> None:
        super().release_slot()
        self._freed.set()

    def acknowledge(self, attempt: Attempt, outcome: Outcome) -> None:
        assert self._writer is not None
        self._writer.submit(attempt, outcome)

    # -- the life of the loop ------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop_fetching(self) -> None:
        self._stop.set()
        self.wake.set()
        self._freed.set()

    def stop(self, shutdown_timeout: float) -> None:
        """Graceful stop: no new fetches, wait for running handlers, requeue what is left; then the loop writes the
        outcomes it holds and ends."""
        self.stop_fetching()
        if not self.wait_or_requeue(shutdown_timeout):
            self.capacity.wait_idle(2.0)  # the cancelled coroutines return their slots
        self._handlers_done.set()
        if self._thread.ident is not None:
            self._thread.join(10)
        self.outbox.drain(timeout=5.0)
        self._threads.shutdown(wait=False, cancel_futures=True)


def chosen_pool(config: WorkerConfig, registry: Registry) -> str:
    """The pool a worker runs: the one named, or for "auto" the asyncio pool when every handler it can run is
    async (none sync, none Spark, and no resolver that may route a type to a sync function), else threads."""
    if config.pool != "auto":
        return config.pool
    handlers = [registry.route(t) for t in registry.types()]
    if handlers and not registry.resolvers and all(h is not None and h.is_async and not h.spark for h in handlers):
        return "asyncio"
    return "thread"
