"""Once a minute, one worker of the deployment writes every queue's size and latency into the time series (see
``taskq.queues.engine.series``): the first worker to claim the minute in Redis does it, the others skip it."""

from __future__ import annotations

from typing import Protocol

from taskq.queues.engine import QueueInfo, series
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.sans_io import Batch, Command

from .component import Component

CHECK_INTERVAL = 5.0  # seconds between two looks at the clock for a new minute
OP = "series.sample"


class QueueReads(Protocol):
    """The reads a sample takes: every queue, and each one's size and latency (``inspection.QueueReads`` does them)."""

    def queues(self) -> list[str]: ...

    def queue_infos(self, queues: list[str], memory_sample: int = ...) -> list[QueueInfo]: ...


class SeriesSampler(Component):
    name = "series_sampler"

    def __init__(self, broker: Broker, reads: QueueReads, interval: float = CHECK_INTERVAL) -> None:
        super().__init__(interval)
        self.broker = broker
        self.reads = reads
        self._sampled: int | None = None  # the last minute this worker looked at

    def run_once(self) -> None:
        now = self.broker.clock.now()
        minute = series.point(now, "m")
        if minute == self._sampled:
            return
        self._sampled = minute
        if not self._claim(minute):
            return  # another worker samples this minute
        queues = self.reads.queues()
        infos = self.reads.queue_infos(queues, memory_sample=0)
        self.broker.drive(OP, series.gauge_flow(self.broker.keys, {i.queue: (i.size, i.latency) for i in infos}, now))

    def _claim(self, minute: int) -> bool:
        """The minute's global series hash takes a ``sampled`` field once: whoever sets it samples."""
        key = self.broker.keys.series("m", minute)
        claimed, _ = self.broker.execute(
            OP, Batch([Command("hsetnx", (key, "sampled", 1)), Command("expire", (key, series.RETENTION["m"]))])
        )
        return bool(claimed)
