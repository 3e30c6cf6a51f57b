"""The event exporter: copies every queue's event stream to Parquet files partitioned by UTC date, for the
analytics pipeline (``manage.py task_analytics``).

One exporter runs at a time across all workers: each round it takes or extends a lease in Redis, and a worker
that does not hold it does nothing. Per queue it attaches to the stream (from then on the scripts trim it by MINID
at the committed offset, never past what is stored, with a hard length cap as a safety net), reads the events
after its committed offset, writes them (``taskq.queues.history.event_files.write_batch``: synced, renamed,
deterministic
names) and only then commits the offset of the last one. A restart therefore re-reads exactly the uncommitted
events and rewrites the same files: nothing lost, nothing doubled. If the oldest event left in a stream is newer
than the committed offset (the hard cap trimmed, or someone deleted entries), the gap is logged, counted in Redis
and shown by ``Inspector.export_status()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.export_store import ExportStore, StreamEntry, parse_stream_id
from taskq.queues.engine.settings import DEFAULTS
from taskq.queues.history.event_files import write_batch

from .component import Component


class EventExporter(Component):
    name = "event_exporter"

    def __init__(
        self,
        broker: Broker,
        directory: str,
        holder: str,
        *,
        interval: float = 1.0,
        batch: int = 50_000,
        flush_age: float = 5.0,
        event_cap: int = DEFAULTS.event_export_cap,
        lease: float = 15.0,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(interval)
        self.store = ExportStore(broker)
        self.directory = directory
        self.holder = holder
        self.batch = batch
        self.flush_age = flush_age  # a batch smaller than ``batch`` waits until its oldest event is this old
        self.event_cap = event_cap
        self.lease = lease
        self.wall_clock = wall_clock
        self.leader = False
        self.attached: dict[str, str] = {}  # queue -> committed offset, while this exporter leads
        self.exported = 0  # events written by this exporter
        self.gaps = 0

    def run_once(self) -> None:
        if not self._hold_lease():
            return
        for queue in self.store.queues():
            if self.stopping or not self._hold_lease():
                return
            self.export_queue(queue)

    def _hold_lease(self) -> bool:
        leader = self.store.acquire(self.holder, self.lease)
        if leader != self.leader:
            self.log.info("exporter %s: %s", self.holder, "took the lease" if leader else "lost the lease")
            self.attached.clear()  # another exporter may have moved the offsets meanwhile
        self.leader = leader
        return leader

    def export_queue(self, queue: str) -> int:
        """Export what is due of one queue; returns how many events were stored."""
        committed = self.attached.get(queue)
        if committed is None:
            committed = self.store.attach(queue, self.event_cap)
        gap = self.store.find_gap(queue, committed)
        if gap is not None:
            self.gaps += 1
            total = self.store.record_gap(gap)
            self.log.warning(
                "exporter: gap in queue %r: events after %s up to %s were trimmed before they were "
                "exported (%d gap(s) so far)",
                queue,
                gap.committed,
                gap.first_id,
                total,
            )
        stored = 0
        while not self.stopping:
            entries = self.store.read(queue, committed, self.batch)
            if not entries or (len(entries) < self.batch and not self._due(entries)):
                break
            write_batch(self.directory, queue, entries)
            # Only after the files are durable: a crash before this line rewrites the same files on restart.
            self.store.commit(queue, entries[-1].stream_id)
            committed = entries[-1].stream_id
            stored += len(entries)
            if len(entries) < self.batch or not self._hold_lease():
                break
        self.attached[queue] = committed
        self.exported += stored
        return stored

    def _due(self, entries: list[StreamEntry]) -> bool:
        oldest_ms, _ = parse_stream_id(entries[0].stream_id)
        return self.wall_clock() * 1000 - oldest_ms >= self.flush_age * 1000

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self.leader:
            try:
                self.store.release(self.holder)
            except Exception as exc:  # Redis away: the lease runs out by itself
                self.log.warning("exporter: could not release the lease: %s", exc)
            self.leader = False
