"""Queues over time: the per-minute and per-hour series (``series``), the processed and failed counts of each
UTC day (``DailyStats``), and the event exporter that carries every transition to the History page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .. import series as time_series
from .. import validation as check
from ..errors import QueueNotFoundError, ValidationError
from ..export_store import ExportStatus, ExportStore
from ..quoting import shown
from ..sans_io import Command
from ..series import Point
from .inspector_core import InspectorCore


@dataclass
class DailyStats:
    date: str
    processed: int
    failed: int


class QueueHistory:
    """What the queues did: series, daily counts, the exporter's progress."""

    def __init__(self, core: InspectorCore) -> None:
        self.core = core
        self.keys = core.keys

    def series(
        self, queue: str | None, range_name: str, most: int = 120, fields: list[str] | None = None
    ) -> list[Point]:
        """The time series of ``queue`` (None: every queue's totals) over one of ``series.RANGES``, oldest first,
        at most ``most`` points (consecutive minutes or hours added up); with ``fields``, only those fields.
        One pipelined round trip.

        Raises:
            ValidationError: the range is not one of ``series.RANGES``, or the queue name is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        if range_name not in time_series.RANGES:
            raise ValidationError(
                f"range must be one of {', '.join(time_series.RANGES)}, not {shown(range_name)}", op="inspector.series"
            )
        if queue is not None:
            check.queue_name(queue, "inspector.series")
        back, resolution = time_series.RANGES[range_name]
        now = self.core.broker.clock.now()
        start = now - back + time_series.STEP[resolution]
        points = self.core.drive("series", time_series.read_flow(self.keys, queue, resolution, start, now, fields))
        return time_series.downsample(points, most)

    def history(self, queue: str, days: int = 7) -> list[DailyStats]:
        """Processed and failed counts per UTC day, newest first.

        Raises:
            ValidationError: the queue name is malformed, or ``days`` is outside 1-90.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        found = self.histories([queue], days)
        if queue not in found:
            raise QueueNotFoundError(f"no queue named {shown(queue)}", op="inspector.history")
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
        today = datetime.fromtimestamp(self.core.broker.clock.now(), tz=UTC)
        dates = [(today - timedelta(days=n)).strftime("%Y-%m-%d") for n in range(days)]
        cluster = self.core.broker.cluster
        commands = [Command("smismember", (self.queue_set, queues))]
        for queue in queues:
            keys = [k for d in dates for k in self.day_keys(queue, d)]
            if cluster:  # a cluster pipeline refuses MGET, even of keys in one slot
                commands += [Command("get", (key,)) for key in keys]
            else:
                commands.append(Command("mget", (keys,)))
        replies = iter(self.core.batch("history", commands))
        known = next(replies)
        found = {}
        for queue, exists in zip(queues, known, strict=True):
            values = [next(replies) for _ in range(2 * days)] if cluster else next(replies)
            if exists:
                found[queue] = [
                    DailyStats(d, int(values[2 * i] or 0), int(values[2 * i + 1] or 0)) for i, d in enumerate(dates)
                ]
        return found

    # The layout's own keys, which asynq's layout names otherwise (``asynq/inspection``).

    @property
    def queue_set(self) -> str:
        """The set of every queue's name."""
        return self.keys.queues

    def day_keys(self, queue: str, day: str) -> tuple[str, str]:
        """The processed and failed counters of ``queue`` on ``day`` (YYYY-MM-DD, UTC)."""
        q = self.keys.queue(queue)
        return q.processed_on(day), q.failed_on(day)

    def export_status(self) -> ExportStatus:
        """The event exporter: who holds its lease, per queue the committed offset against the stream, gaps.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return ExportStore(self.core.broker).status()
