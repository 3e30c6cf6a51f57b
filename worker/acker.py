"""The acker writes attempt outcomes to Redis, many per round trip: successes of a queue go out as one
``done`` (or ``complete``) script call, shutdown requeues as one ``requeue`` call; failures are rarer and go
one by one. Each task in a batch is still fenced by its own lease token, so batching weakens nothing.

Outcomes that cannot be written because Redis is away go to the syncer, which retries them until the lease
runs out (after that the recoverer owns the task).

Fetch-on-ack: a handler thread whose task succeeded may hand its slot to the acker (``Attempt.holds_slot``) instead
of freeing it. The ``done`` (or ``complete``) call of the batch then also leases up to one task of the same queue
per slot handed over (``FetchNext``), and ``Refill.fill_slots`` starts them in those slots and frees the ones left
over; the processor decides when a slot may go this way and what to lease (``Refill.fetch_next``). A slot handed
over is freed exactly once, whatever the call's fate.

Each outcome written (and not refused by the fence) is added to the time series tally (``taskq.queues.engine.series``),
which the acker writes about once a second, between acknowledgements.

Linger: when few outcomes wait, the acker waits ``linger`` seconds (2 ms by default) before it takes them, so that the
outcomes finished meanwhile go in the same call. Without it, under a steady stream of short tasks, each call took the
2-4 outcomes that arrived during the call before (a round trip per 3 tasks at concurrency 64), and every round trip
is a turn for the GIL that 64 handler threads wait for as well; with it a call takes 15-35. An outcome whose slot was
handed over (fetch-on-ack) is never held back: a handler slot waits for that call.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Generator
from typing import Any, Protocol

from taskq.queues.engine import EngineError, LeaseLostError, RedisUnavailableError, TaskNotFoundError, series
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.redaction import NO_REDACTION, Redaction
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.transitions import Acked, ArchiveLimits, Call, Dequeued, FetchNext

from .attempt import Attempt, Outcome
from .component import Component
from .metrics import WorkerMetrics
from .outbox import Backlog, Item, Outbox

log = logging.getLogger("taskq.worker.acker")

#: How outcomes are written, as a flow (``taskq.queues.engine.sans_io``): it yields the transition calls and gets
#: their replies (or their errors thrown in), so the acker's thread drives it on the blocking broker and the asyncio
#: pool (worker/aio/) on the asyncio one, with the same grouping, fencing and fetch-on-ack.
WriteFlow = Generator[Call, Any, list[Item]]

MAX_BATCH = 500
LINGER_BELOW = 64  # linger only while fewer outcomes than this wait: a larger batch is worth a call at once
SERIES_INTERVAL = 1.0  # seconds between two writes of the time series tally, at least


class Refill(Protocol):
    """Who fills the slots handed over with successes (the processor)."""

    def fetch_next(self, queue: str, slots: int) -> FetchNext | None:
        """What the ack of ``queue`` leases for ``slots`` slots, or None to lease nothing (quiet, stopping)."""

    def fill_slots(self, queue: str, leased: Dequeued, slots: int) -> None:
        """Start the tasks leased in the ``slots`` handed over, and free those left over. Called once for each
        batch that handed slots over, whatever became of its call."""


class Acker:
    """Writes the outcomes of the ``outbox`` from a thread of its own.

    Threads: ``write`` runs on the acker's thread and, for the backlog, on the syncer's, so the counters
    (``processed``, ``failed``, ``refused``, ``abandoned``) are added to under ``_counts_lock``; the heartbeat reads
    them without it (an int read is atomic). The outbox, the backlog and the series tally guard themselves.
    """

    def __init__(
        self,
        broker: Broker,
        worker_id: str,
        on_written: Callable[[Attempt], None],
        archive_limits: Callable[[str], ArchiveLimits] | None = None,
        metrics: WorkerMetrics | None = None,
        redaction: Redaction = NO_REDACTION,
        linger: float = 0.0,
        *,
        outbox: Outbox | None = None,
        backlog: Backlog | None = None,
        refill: Refill | None = None,
    ) -> None:
        self.broker = broker
        self.linger = linger  # seconds to wait for more outcomes before writing a small batch (see above)
        self.redaction = redaction  # masks failures' messages and tracebacks as payloads are masked
        self.metrics = metrics
        self.ops = broker.transitions
        self.worker_id = worker_id
        self.on_written = on_written
        self.archive_limits = archive_limits or (lambda _queue: ArchiveLimits())
        self.outbox = outbox or Outbox()  # what it writes: the processor submits there
        self.backlog = backlog or Backlog()  # what Redis did not take: the syncer retries it
        self.refill = refill  # who fills the slots handed over (fetch-on-ack): the processor, or None when off
        self.refused = 0  # acknowledgements the fence refused (a zombie's, or the lease was recovered)
        self.abandoned = 0  # outcomes given up unwritten: Redis stayed away until their lease ran out
        self._thread = threading.Thread(target=self._loop, name="acker", daemon=True)
        self.series = series.SeriesTally()
        self.processed = 0  # attempts finished and written since start, failures included (as asynq counts)
        self.failed = 0
        self._counts_lock = threading.Lock()
        self._series_written = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the loop that writes outcomes runs (for the health endpoint)."""
        return self._thread.is_alive()

    def submit(self, attempt: Attempt, outcome: Outcome) -> None:
        """Hand an outcome over to be written (as ``outbox.submit``)."""
        self.outbox.submit(attempt, outcome)

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted outcome was written (or handed to the syncer)."""
        return self.outbox.drain(timeout)

    def stop(self) -> None:
        self.outbox.close()
        self._thread.join(5)
        self.write_series()

    def _loop(self) -> None:
        while True:
            try:
                first = self.outbox.take(timeout=SERIES_INTERVAL)
            except queue.Empty:
                self._series_due()
                continue
            if first is None:
                return
            if self.linger and not first[0].holds_slot and self.outbox.waiting() < LINGER_BELOW:
                time.sleep(self.linger)
            batch = [first, *self.outbox.take_more(MAX_BATCH - 1)]
            try:
                unwritten = self.write(batch)
                if unwritten:
                    self.backlog.add(unwritten)
            except Exception:
                log.exception("acker round failed")
            finally:
                self.outbox.done(len(batch))
            self._series_due()

    def _series_due(self) -> None:
        if time.monotonic() - self._series_written >= SERIES_INTERVAL:
            self.write_series()

    def write_series(self) -> None:
        """Write the time series tally; what Redis does not take is kept for the next write."""
        self._series_written = time.monotonic()
        taken = self.series.drain()
        if not taken:
            return
        try:
            self.broker.drive("acker.series", series.flush_flow(self.broker.keys, taken))
        except EngineError as exc:
            self.series.put_back(taken)
            log.debug("time series not written: %s", exc)

    def _counted(self, queue_name: str, written: list[Item]) -> None:
        """Add outcomes of ``queue_name`` written now to the time series: each one's run time, and its wait from
        pending to started (in one call for the batch: see ``SeriesTally.finished_many``)."""
        ends = []
        failed = 0
        for attempt, outcome in written:
            if outcome.kind in ("success", "complete"):
                counted = "ok"
            elif outcome.kind == "archive" or (outcome.kind == "retry" and outcome.is_failure):
                counted = outcome.kind
            else:
                continue  # a requeue at shutdown or a retry that is no failure: not an attempt's end
            since = attempt.leased.pending_since_ms / 1000
            waited = max(0.0, attempt.started - since) * 1000 if since else 0.0
            ran = attempt.ran or time.monotonic() - attempt.began  # an attempt ended from outside has no ran yet
            ends.append((attempt.task.type, counted, ran * 1000, waited))
            failed += counted != "ok"
        with self._counts_lock:
            self.failed += failed
            self.processed += len(ends)
        if ends:
            self.series.finished_many(queue_name, self.broker.clock.now(), ends)

    def write(self, batch: list[Item]) -> list[Item]:
        """Write outcomes; returns those that could not be written because Redis is unreachable."""
        return list(drive(self.write_flow(batch), self.broker.run))

    def write_flow(self, batch: list[Item]) -> WriteFlow:
        """``write`` as a flow, for any broker to drive; its value is the outcomes Redis did not take."""
        groups: dict[tuple[str, str], list[Item]] = defaultdict(list)
        unwritten: list[Item] = []
        for attempt, outcome in batch:
            kind = outcome.kind
            if kind == "success" and attempt.task.message.retention:
                kind = "complete"
            if kind in ("success", "complete", "requeue"):
                groups[(kind, attempt.queue)].append((attempt, outcome))
            elif kind == "drop":
                self.on_written(attempt)
            else:
                unwritten += yield from self._write_one(attempt, outcome)
        for (kind, queue_name), items in groups.items():
            unwritten += yield from self._write_group(kind, queue_name, items)
        return unwritten

    def _write_group(self, kind: str, queue_name: str, items: list[Item]) -> WriteFlow:
        # The slots handed over are freed (or filled) once, here, whatever becomes of the call: an outcome the
        # syncer retries later holds none.
        slots = 0
        for attempt, _ in items:
            slots += attempt.holds_slot
            attempt.holds_slot = False
        then = self.refill.fetch_next(queue_name, slots) if slots and self.refill is not None else None
        leased = Dequeued()
        try:
            return (yield from self._run_group(kind, queue_name, items, then, leased))
        finally:
            if slots and self.refill is not None:
                self.refill.fill_slots(queue_name, leased, slots)

    def _run_group(
        self, kind: str, queue_name: str, items: list[Item], then: FetchNext | None, leased: Dequeued
    ) -> WriteFlow:
        """Write a group of outcomes; the tasks its ack leased (``then``) go into ``leased``."""
        started = [a.started for a, _ in items]
        if kind == "complete":
            leases = [(a.id, a.token, a.task.message.retention) for a, _ in items]
            call = self.ops.complete(queue_name, leases, self.worker_id, started, then)
        elif kind == "requeue":
            call = self.ops.requeue(queue_name, [(a.id, a.token) for a, _ in items], self.worker_id)
        else:
            call = self.ops.done(queue_name, [(a.id, a.token) for a, _ in items], self.worker_id, started, then)
        try:
            reply = yield call
        except EngineError as exc:  # Redis away or refusing writes (READONLY, OOM): the syncer retries
            if exc.code != "unavailable":
                log.warning("cannot write %d outcome(s) to %s: %s; retrying", len(items), queue_name, exc)
            return items
        statuses = reply
        if isinstance(reply, Acked):
            statuses = reply.statuses
            leased.extend(reply.leased)
            leased.limited_until = reply.leased.limited_until
        written = []
        for item, status in zip(items, statuses, strict=True):
            if status != "OK":
                self._refused(item[0], status)
            else:
                written.append(item)
        self._counted(queue_name, written)
        for attempt, _ in items:
            self.on_written(attempt)
        return []

    def _write_one(self, attempt: Attempt, outcome: Outcome) -> WriteFlow:
        error, failure = outcome.error, outcome.failure
        if failure is not None:  # stored as a person may see it: no payload secret in the message or traceback
            failure = failure.redacted(self.redaction, attempt.task.type, attempt.task.message.payload)
            error = failure.error
        if outcome.kind == "retry":
            call = self.ops.retry(
                attempt.queue,
                attempt.id,
                attempt.token,
                outcome.retry_at,
                error,
                worker=self.worker_id,
                is_failure=outcome.is_failure,
                started=attempt.started,
                failure=failure,
            )
        else:
            call = self.ops.archive(
                attempt.queue,
                attempt.id,
                attempt.token,
                error,
                worker=self.worker_id,
                archive_limits=self.archive_limits(attempt.queue),
                started=attempt.started,
                failure=failure,
            )
        try:
            yield call
        except RedisUnavailableError:
            return [(attempt, outcome)]
        except (LeaseLostError, TaskNotFoundError) as exc:
            self._refused(attempt, exc.code)
        except EngineError as exc:  # Redis refusing writes (READONLY, OOM): the syncer retries until the lease ends
            log.warning("task %s: cannot write its outcome: %s; retrying", attempt.id, exc)
            return [(attempt, outcome)]
        else:
            self._counted(attempt.queue, [(attempt, outcome)])
        self.on_written(attempt)
        return []

    def _refused(self, attempt: Attempt, why: str) -> None:
        if attempt.span is not None:
            attempt.span.lease_lost(f"acknowledgement refused ({why})")
        with self._counts_lock:
            self.refused += 1
        if self.metrics is not None:
            self.metrics.ack_refused(attempt.queue)
        log.warning("task %s: acknowledgement refused (%s); another attempt owns it now", attempt.id, why)

    def abandon(self, attempt: Attempt) -> None:
        """Give up an outcome unwritten: its lease ran out while Redis was away, so the recoverer owns the task."""
        if attempt.span is not None:
            attempt.span.lease_lost("the lease ran out before Redis took the outcome")
        with self._counts_lock:
            self.abandoned += 1
        if self.metrics is not None:
            self.metrics.outcome_abandoned(attempt.queue)
        self.on_written(attempt)


class Syncer(Component):
    """Retries the outcomes of the ``backlog`` (those the acker could not write), until each one's lease has run
    out."""

    name = "syncer"

    def __init__(
        self,
        acker: Acker,
        lease_deadline: Callable[[Attempt], float],
        now: Callable[[], float],
        interval: float = 0.5,
    ) -> None:
        super().__init__(interval)
        self.acker = acker
        self.backlog = acker.backlog
        self.lease_deadline = lease_deadline
        self.now = now

    def add(self, items: list[Item]) -> None:
        self.backlog.add(items)

    def run_once(self) -> None:
        items = self.backlog.take_all()
        if not items:
            return
        now = self.now()
        live = []
        for attempt, outcome in items:
            if self.lease_deadline(attempt) > now:
                live.append((attempt, outcome))
            else:
                log.warning(
                    "task %s: lease ran out before its outcome could be written; the recoverer will retry it",
                    attempt.id,
                )
                self.acker.abandon(attempt)
        unwritten = self.acker.write(live)
        if unwritten:
            self.backlog.add(unwritten)
            raise RedisUnavailableError(f"{len(unwritten)} outcome(s) still waiting for Redis", op="syncer")
