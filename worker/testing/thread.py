"""A real worker (``taskq.worker.server.Server``) in background threads of the test process, with short intervals,
and ``run_until_empty``: let it work until a queue has nothing left to do now, then report what happened."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from taskq.queues.engine import DEFAULT_PREFIX, Clock, Inspector, Registry, registry
from taskq.queues.engine.quoting import shown
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

#: Intervals short enough that a test never waits long for the forwarder, recoverer or janitor.
FAST_CONFIG: dict[str, Any] = dict(
    concurrency=4,
    heartbeat_interval=0.2,
    recoverer_interval=0.3,
    forwarder_interval=0.05,
    janitor_interval=0.2,
    aggregator_interval=0.1,
    shutdown_timeout=2.0,
    idle_wait=0.2,
)
POLL = 0.02  # seconds between looks at the queue while waiting for it to empty


@dataclass
class RunSummary:
    """What ``run_until_empty`` saw: attempts that ended since the worker started (or since the previous
    ``run_until_empty`` of the queue), and the queue's tasks per state after."""

    queue: str
    processed: int  # attempts that ended, successful or not
    failed: int  # of them, the failures
    counts: dict[str, int] = field(default_factory=dict)  # per state: completed, retry, archived, scheduled, ...

    @property
    def succeeded(self) -> int:
        return self.processed - self.failed


class WorkerThread:
    """``WorkerThread(redis_url)`` runs a worker for ``registry`` (default: the one ``@handler`` fills) on
    ``queues`` (default: ``default``) until ``stop``; use it as a context manager. ``clock`` is the worker's
    time: give a ``FakeClock`` and advance it to make scheduled and retry tasks due. ``config`` overrides any
    ``WorkerConfig`` field."""

    def __init__(
        self,
        redis_url: str,
        *,
        queues: dict[str, int] | None = None,
        registry: Registry = registry,
        clock: Clock | None = None,
        prefix: str = DEFAULT_PREFIX,
        **config: Any,
    ) -> None:
        settings = {**FAST_CONFIG, **config, "queues": dict(queues or {"default": 1})}
        self.server = Server(WorkerConfig(redis_url=redis_url, prefix=prefix, **settings), registry, clock=clock)
        self.inspector = Inspector(redis_url, prefix=prefix, clock=self.server.broker.clock, actor="taskq.testing")
        self._started = False
        # The queue's processed and failed totals when the summary's count begins, per queue.
        self._since: dict[str, tuple[int, int]] = {}

    def start(self) -> WorkerThread:
        for queue in self.server.queues.names():
            self._since[queue] = self._totals(queue)
        self.server.start()
        self._started = True
        return self

    def _totals(self, queue: str) -> tuple[int, int]:
        info = self.inspector.queue_infos([queue])[0]
        return info.processed_total, info.failed_total

    def stop(self) -> None:
        """Graceful, as on SIGTERM: running tasks get ``shutdown_timeout`` to finish. Safe to call twice."""
        if self._started:
            self.server.stop()
            self._started = False
        self.inspector.broker.close()

    def __enter__(self) -> WorkerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_until_empty(self, queue: str = "default", *, timeout: float = 30.0) -> RunSummary:
        """Wait until ``queue`` has nothing pending, nothing active and no scheduled or retry task due by the
        worker's clock, and return what ended since the worker started or since the previous call for the queue.
        The queue is added to the served ones if needed.
        Tasks retried later than now stay in ``retry``: advance the clock and call again to run them. Raises
        TimeoutError when the queue still has work after ``timeout`` seconds (a handler that never returns,
        a paused queue)."""
        served = self.server.queues.weights()
        if queue not in served:
            self._since[queue] = self._totals(queue)
            self.server.queues.update(weights={**served, queue: 1})
            self.server.processor.wake.set()
        give_up = time.monotonic() + timeout
        while (left := self.inspector.outstanding(queue)) > 0:
            if time.monotonic() > give_up:
                raise TimeoutError(f"queue {shown(queue)} still has {left} task(s) to run after {timeout:g} s")
            time.sleep(POLL)
        after = self.inspector.queue_infos([queue])[0]
        processed, failed = self._since[queue]
        self._since[queue] = after.processed_total, after.failed_total
        return RunSummary(queue, after.processed_total - processed, after.failed_total - failed, after.counts())


def run_until_empty(queue: str = "default", *, redis_url: str, timeout: float = 30.0, **worker: Any) -> RunSummary:
    """Start a ``WorkerThread`` (``worker`` holds its options), run ``queue`` until empty, stop it."""
    with WorkerThread(redis_url, **worker) as thread:
        return thread.run_until_empty(queue, timeout=timeout)
