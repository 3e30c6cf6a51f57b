"""Prometheus metrics of a worker process, served on its own port (``taskworker --metrics-port``): task run time
by queue, type and outcome, tasks in flight, and how long each fetch round trip takes.

Multi-process safe: with ``PROMETHEUS_MULTIPROC_DIR`` set (prometheus_client's convention, for a worker whose
handlers run in child processes), values live in files in that folder and the exporter merges them.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, multiprocess, start_http_server

# Run times from a millisecond to an hour: tasks range from no-ops to reports.
RUNTIME_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
FETCH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runtime = Histogram("taskq_task_runtime_seconds", "Handler run time of finished attempts.",
                                 ["queue", "type", "outcome"], buckets=RUNTIME_BUCKETS, registry=self.registry)
        self.in_flight = Gauge("taskq_worker_tasks_in_flight", "Attempts this worker is running.", ["queue"],
                               registry=self.registry, multiprocess_mode="livesum")
        self.fetch_latency = Histogram("taskq_worker_fetch_latency_seconds", "Round trip of one dequeue call.",
                                       buckets=FETCH_BUCKETS, registry=self.registry)

    def started(self, queue: str, count: int) -> None:
        self.in_flight.labels(queue).inc(count)

    def finished(self, queue: str, task_type: str, outcome: str, seconds: float) -> None:
        self.in_flight.labels(queue).dec()
        self.runtime.labels(queue, task_type, "success" if outcome == "success" else "failure").observe(seconds)

    def serve(self, port: int, host: str = "0.0.0.0") -> Any:
        """Start the exporter thread; returns the HTTP server (``.server_address`` has the bound port)."""
        registry = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        server, _thread = start_http_server(port, addr=host, registry=registry)
        return server
