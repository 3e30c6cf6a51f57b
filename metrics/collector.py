"""The Prometheus collector of the console's /metrics: it reads Redis on every scrape, through the engine's
Inspector, in a fixed handful of round trips whatever the number of queues.

Every known queue exports every series, 0 when empty, so dashboards and alerts never see gaps. Labels are
``queue``, ``state`` and ``type``; never a worker or task id (those would make unbounded series).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from taskq.queues.engine import STATES, Inspector, serving
from taskq.queues.engine.inspector import INFO_REFUSED

#: Task hashes sampled per state for the memory estimate: small, so a scrape of 100 queues stays cheap.
MEMORY_SAMPLE = 3


class QueueCollector(Collector):
    def __init__(self, inspector: Callable[[], Inspector]) -> None:
        self._inspector = inspector

    def collect(self) -> Iterator[Metric]:
        inspector = self._inspector()
        queues = inspector.queues()
        infos = inspector.queue_infos(queues, memory_sample=MEMORY_SAMPLE)
        by_type = inspector.type_counts_of(queues, keep_zero=True)
        servers = inspector.servers()

        tasks = GaugeMetricFamily("taskq_tasks", "Tasks per queue and state.", labels=["queue", "state"])
        size = GaugeMetricFamily("taskq_queue_size", "Tasks in the queue (completed excluded).", labels=["queue"])
        latency = GaugeMetricFamily("taskq_queue_latency_seconds", "Age of the oldest pending task.", labels=["queue"])
        memory = GaugeMetricFamily(
            "taskq_queue_memory_usage_approx_bytes",
            "Approximate Redis memory of the queue, from a sample of its tasks.",
            labels=["queue"],
        )
        paused = GaugeMetricFamily("taskq_queue_paused", "1 while the queue is paused.", labels=["queue"])
        processed = CounterMetricFamily(
            "taskq_tasks_processed", "Finished attempts (failed ones included).", labels=["queue"]
        )
        failed = CounterMetricFamily("taskq_tasks_failed", "Failed attempts.", labels=["queue"])
        readers = GaugeMetricFamily(
            "taskq_queue_servers",
            "Live worker servers reading the queue (by name or pattern; quiet and stopping ones excluded).",
            labels=["queue"],
        )
        reading = serving.readers((info.queue for info in infos), servers)
        for info in infos:
            for state, count in info.counts().items():
                tasks.add_metric([info.queue, state], count)
            size.add_metric([info.queue], info.size)
            latency.add_metric([info.queue], info.latency)
            memory.add_metric([info.queue], info.memory_bytes)
            paused.add_metric([info.queue], 1 if info.paused else 0)
            processed.add_metric([info.queue], info.processed_total)
            failed.add_metric([info.queue], info.failed_total)
            readers.add_metric([info.queue], reading[info.queue])
        yield from (tasks, size, latency, memory, paused, processed, failed, readers)
        yield from self._per_type(by_type)

        workers = sum(len(server.active) for server in servers)
        yield GaugeMetricFamily("taskq_servers", "Worker processes with a current heartbeat.", value=len(servers))
        yield GaugeMetricFamily("taskq_active_workers", "Handlers running right now, over all servers.", value=workers)
        yield from self._redis_memory(inspector)

    @staticmethod
    def _redis_memory(inspector: Inspector) -> Iterator[Metric]:
        """Redis's memory and its limit, for the alert on memory near the limit: past maxmemory a noeviction Redis
        refuses every enqueue. Left out where INFO is forbidden (managed Redis often disables it)."""
        info = inspector.redis_info()
        if INFO_REFUSED in info:
            return
        yield GaugeMetricFamily(
            "taskq_redis_memory_used_bytes",
            "Memory Redis has allocated (INFO used_memory).",
            value=info.get("used_memory", 0),
        )
        yield GaugeMetricFamily(
            "taskq_redis_memory_max_bytes", "Redis's maxmemory; 0 when it has no limit.", value=info.get("maxmemory", 0)
        )

    @staticmethod
    def _per_type(by_type: dict[str, dict[str, dict[str, int]]]) -> Iterator[Metric]:
        """asynq has no per-type figures; these come from the counts the scripts keep per type. A type exports the
        states it has been in (0 once empty again): the full type x state matrix would double a scrape's size."""
        tasks = GaugeMetricFamily(
            "taskq_type_tasks", "Tasks per queue, task type and state.", labels=["queue", "type", "state"]
        )
        processed = CounterMetricFamily(
            "taskq_type_processed", "Finished attempts per task type.", labels=["queue", "type"]
        )
        failed = CounterMetricFamily("taskq_type_failed", "Failed attempts per task type.", labels=["queue", "type"])
        for queue, types in by_type.items():
            for task_type, counts in types.items():
                for state in STATES:
                    if state in counts:
                        tasks.add_metric([queue, task_type, state], counts[state])
                processed.add_metric([queue, task_type], counts.get("processed", 0))
                failed.add_metric([queue, task_type], counts.get("failed", 0))
        yield from (tasks, processed, failed)
