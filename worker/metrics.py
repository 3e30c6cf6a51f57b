"""Prometheus metrics of a worker process, served on its own port (``taskworker --metrics-port``): task run time
by queue, type and outcome, tasks in flight, how long each fetch round trip takes, and the lease fence at work
(acknowledgements refused, outcomes abandoned, attempts stopped because their lease ran out).

Multi-process safe: with ``PROMETHEUS_MULTIPROC_DIR`` set (prometheus_client's convention, for a worker whose
handlers run in child processes), values live in files in that folder and the exporter merges them.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server

# Run times from a millisecond to an hour: tasks range from no-ops to reports.
RUNTIME_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
FETCH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
HEADER_BYTES = 8  # a multi-process value file starts with its used length and padding (prometheus_client)


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runtime = Histogram(
            "taskq_task_runtime_seconds",
            "Handler run time of finished attempts.",
            ["queue", "type", "outcome"],
            buckets=RUNTIME_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "taskq_worker_tasks_in_flight",
            "Attempts this worker is running.",
            ["queue"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.fetch_latency = Histogram(
            "taskq_worker_fetch_latency_seconds",
            "Round trip of one dequeue call.",
            buckets=FETCH_BUCKETS,
            registry=self.registry,
        )
        # Each of these means an attempt lost its lease while it ran, so its task may run (or have run) twice: a
        # worker paused or cut off from Redis for longer than the lease. Exported with a _total suffix.
        self.acks_refused = self._per_queue_counter(
            "taskq_worker_acks_refused",
            "Acknowledgements the lease fence refused: stale, another attempt owned the task by then.",
        )
        self.outcomes_abandoned = self._per_queue_counter(
            "taskq_worker_outcomes_abandoned",
            "Outcomes given up unwritten: Redis stayed unreachable until their lease ran out.",
        )
        self.leases_expired = self._per_queue_counter(
            "taskq_worker_leases_expired", "Attempts stopped because their lease ran out without being extended."
        )
        self._counting: set[str] = set()

    def _per_queue_counter(self, name: str, documentation: str) -> Counter:
        return Counter(name, documentation, ["queue"], registry=self.registry)

    def started(self, queue: str, count: int) -> None:
        if queue not in self._counting:
            self._count_from_zero(queue)
        self.in_flight.labels(queue).inc(count)

    def _count_from_zero(self, queue: str) -> None:
        """Export the queue's lease counters at 0 from its first attempt on: Prometheus's increase() and rate() do
        not see a counter's first step when the series only appears with it."""
        self._counting.add(queue)
        for counter in (self.acks_refused, self.outcomes_abandoned, self.leases_expired):
            counter.labels(queue)

    def ack_refused(self, queue: str) -> None:
        self.acks_refused.labels(queue).inc()

    def outcome_abandoned(self, queue: str) -> None:
        self.outcomes_abandoned.labels(queue).inc()

    def lease_expired(self, queue: str) -> None:
        self.leases_expired.labels(queue).inc()

    def finished(self, queue: str, task_type: str, outcome: str, seconds: float) -> None:
        self.in_flight.labels(queue).dec()
        self.runtime.labels(queue, task_type, "success" if outcome == "success" else "failure").observe(seconds)

    def serve(self, port: int, host: str = "0.0.0.0") -> Any:
        """Start the exporter thread; returns the HTTP server (``.server_address`` has the bound port)."""
        registry = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            registry.register(SettledFilesCollector(os.environ["PROMETHEUS_MULTIPROC_DIR"]))
        server, _thread = start_http_server(port, addr=host, registry=registry)
        return server


class SettledFilesCollector:
    """prometheus_client's multi-process merge, minus the files still being created. A process creates its file
    for a metric type when it first writes one (``open``, then growing it to its initial size): a scrape that
    reads it in between finds no header and fails with a 500. Such a file holds no value yet, so it is skipped;
    the next scrape reads it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self) -> Any:
        settled = []
        for name in glob.glob(os.path.join(self.path, "*.db")):
            try:
                if os.path.getsize(name) >= HEADER_BYTES:
                    settled.append(name)
            except FileNotFoundError:  # a live gauge's file removed when its process ended
                continue
        return multiprocess.MultiProcessCollector.merge(settled, accumulate=True)  # type: ignore[no-untyped-call]
