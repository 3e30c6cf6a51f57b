"""A worker server: wires the processor, acker and background components together, and runs them until a
signal. SIGTERM/SIGINT (or an operator's stop) stop it gracefully: no new fetches, running tasks get the shutdown
timeout to finish, the rest go back to pending, and the server leaves a record of how it ended and of what became
of each task it held. SIGKILL needs no code: the leases run out and the recoverer of any worker sends the tasks to
retry (and records the server as lost).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from taskq.queues.engine import AggregatorRegistry, Clock, Registry, aggregators, registry, warn_if_evicting
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.inspection.inspector_core import InspectorCore
from taskq.queues.engine.inspection.queue_stats import QueueReads
from taskq.queues.engine.server_records import GRACEFUL
from taskq.queues.engine.worker_store import WorkerStore

from .acker import Acker, Syncer
from .aggregator import Aggregator, queue_group_settings
from .asyncio_pool.asyncio_processor import AsyncioProcessor, chosen_pool
from .attempt import Attempt
from .component import Component
from .config import WorkerConfig
from .definitions import DefinitionWatcher
from .health import WorkerHealth
from .heartbeat import Heartbeat
from .layout_guard import LayoutGuard
from .maintenance import Watchdog, forwarder, janitor
from .metrics import WorkerMetrics
from .outbox import Backlog, Outbox
from .patterns import QueuePatterns
from .processor import Processor
from .queueset import QueueSet
from .recoverer import Recoverer
from .series_sampler import SeriesSampler
from .spark import SparkRunner
from .spark_submitter import SparkSubmitter
from .stop_signals import run_until_signalled
from .subscriber import Subscriber
from .trace_logs import record_trace_ids

log = logging.getLogger("worker")


class Server:
    """The worker's composition root: builds every part with what it needs, in the order they need each other, and
    runs them. No part is handed another after it is built.

    Order: the broker and the stores; the outbox (outcomes on their way to the acker) and the backlog (those Redis
    did not take), which break the processor <-> acker circle; the processor (it submits to the outbox); the
    definitions watcher (it wakes the processor); the acker (it writes the outbox, tells the processor what it wrote
    and fills the slots handed over, fetch-on-ack), which the asyncio pool's processor is then given, since its loop
    writes with the acker's flow; then the components that read the processor and the acker.
    """

    def __init__(
        self,
        config: WorkerConfig,
        registry: Registry = registry,
        clock: Clock | None = None,
        aggregators: AggregatorRegistry = aggregators,
    ) -> None:
        self.config = config
        self.registry = registry
        self.broker = Broker(config.redis_url, prefix=config.prefix, clock=clock, limits=config.limits)
        self.store = WorkerStore(self.broker)
        # One set of served queues that every component reads; the watcher changes it while the worker runs.
        self.queues = queues = QueueSet(config.queues)
        actor = config.server_id
        self.metrics = WorkerMetrics() if config.metrics_port is not None else None
        self.spark = SparkRunner(config.spark)
        self.submitter = SparkSubmitter(config.spark_submit)
        outbox, backlog = Outbox(), Backlog()
        self.pool = chosen_pool(config, registry)
        kind = AsyncioProcessor if self.pool == "asyncio" else Processor
        self.processor = processor = kind(
            self.broker, config, registry, outbox, queues, self.metrics, self.spark, bind=self.submitter.bind
        )
        self.definitions = DefinitionWatcher(self.broker, self.store, queues, config, on_change=processor.wake.set)
        limits = self.definitions.archive_limits
        self.acker = Acker(
            self.broker,
            actor,
            on_written=processor.forget,
            archive_limits=limits,
            metrics=self.metrics,
            redaction=config.redaction,
            linger=config.ack_linger,
            outbox=outbox,
            backlog=backlog,
            refill=processor if config.fetch_on_ack else None,
        )
        if isinstance(processor, AsyncioProcessor):
            processor.attach(self.acker)  # its loop writes its outcomes with the acker's flow
        self.syncer = Syncer(self.acker, lambda attempt: attempt.lease_until, self.broker.clock.now)
        # Set to end run(): a refused key layout, or an operator's stop (read by the heartbeat).
        self.stop_requested = threading.Event()
        self.layout = LayoutGuard(self.broker, "worker", refused=self.stop_requested)
        self.heartbeat = Heartbeat(
            self.broker,
            self.store,
            config,
            processor,
            layout=self.layout,
            on_stop=self.stop_requested.set,
            counts=self.acker,
        )
        self.patterns = self._patterns()
        self._components = self._background(aggregators)
        self._stopping = threading.Event()  # set once by stop(), on whichever thread runs it
        self.health = WorkerHealth(
            self.loops(), lambda: self.heartbeat.last_beat, self.heartbeat.ttl, self.broker.clock.now
        )
        # The HTTP servers of /metrics and /healthz: the thread that runs start() and stop() only.
        self.metrics_server: Any = None
        self.health_server: Any = None

    def _patterns(self) -> QueuePatterns | None:
        """With --queues glob patterns, the resolver that keeps the matched queues in the served set."""
        if not self.config.queue_patterns:
            return None
        return QueuePatterns(
            self.store,
            self.queues,
            self.config.queues,
            self.config.queue_patterns,
            lambda: self.definitions.policies.queues,
            self.config.definitions_interval,
            on_change=self.processor.wake.set,
        )

    def _background(self, aggregators: AggregatorRegistry) -> list[Component]:
        """Build the components that run on threads of their own; returns them in the order they start."""
        config, queues, actor = self.config, self.queues, self.config.server_id
        self.subscriber = Subscriber(
            self.store,
            queues,
            self.processor,
            list(config.queue_patterns),
            self.patterns.heard if self.patterns is not None else None,
            server_id=actor,
            on_control=self.heartbeat.obey,
        )
        self.watchdog = Watchdog(self.processor)
        self.recoverer = Recoverer(
            self.broker, self.store, config, self.registry, queues, self.definitions.archive_limits
        )
        self.forwarder = forwarder(self.broker, queues, config.forwarder_interval, actor)
        self.janitor = janitor(self.broker, queues, config.janitor_interval, actor)
        # The sampler's queue reads, on the worker's own broker: the inspector's part that reads queues.
        self.series_sampler = SeriesSampler(self.broker, QueueReads(InspectorCore(self.broker)))
        self.aggregator = Aggregator(
            self.broker,
            queues,
            aggregators,
            config.aggregator_interval,
            lambda q: queue_group_settings(config.group_settings, self.definitions.policies, q),
            actor,
        )
        components: list[Component] = [
            self.definitions,
            self.subscriber,
            self.heartbeat,
            self.watchdog,
            self.syncer,
            self.recoverer,
            self.forwarder,
            self.janitor,
            self.series_sampler,
            self.aggregator,
        ]
        if self.patterns is not None:
            components.append(self.patterns)
        if config.export_dir:
            from .event_exporter import EventExporter  # optional: pyarrow (the Parquet export)

            components.append(
                EventExporter(self.broker, config.export_dir, holder=actor, event_cap=config.export_event_cap)
            )
        return components

    def loops(self) -> dict[str, Any]:
        """Every loop of the worker by name -> a function telling whether it runs (for the health endpoint)."""
        loops: dict[str, Any] = {"processor": lambda: self.processor.alive, "acker": lambda: self.acker.alive}
        for component in self._components:
            loops[component.name] = lambda component=component: component.alive
        return loops

    def start(self) -> None:
        record_trace_ids()  # log records made during an attempt carry its trace and span ids (the otel extra)
        if self.metrics is not None and self.config.metrics_port is not None:
            self.metrics_server = self.metrics.serve(self.config.metrics_port, self.config.metrics_host)
            log.info("metrics on http://%s:%d/metrics", *self.metrics_server.server_address[:2])
        if self.config.health_port is not None:
            self.health_server = self.health.serve(self.config.health_port, self.config.health_host)
            log.info("health on http://%s:%d/healthz", *self.health_server.server_address[:2])
        try:
            warn_if_evicting(self.broker)
            # Read the definitions before the first fetch, so a worker following them never serves stale queues.
            self.definitions.run_once()
            if self.patterns is not None:
                self.patterns.run_once()
            self.store.register_queues(self.queues.names())
        except Exception as exc:  # Redis may come later; the components back off until it does
            log.warning("Redis not reachable at start: %s", exc)
        self.acker.start()
        for component in self._components:
            component.start()
        self.processor.start()
        log.info(
            "worker %s serving %s%s (%s, concurrency %d, %s pool, handlers: %s)",
            self.config.server_id,
            ", ".join(f"{q}={w}" for q, w in self.queues.weights().items()),
            " from the queue definitions" if self.config.follow_definitions else "",
            "strict" if self.config.strict else "weighted",
            self.config.concurrency,
            self.pool,
            ", ".join(self.registry.types()) or "none",
        )

    def stop(self) -> None:
        """Graceful shutdown; safe to call more than once."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("stopping: waiting up to %g s for running tasks", self.config.shutdown_timeout)
        self.heartbeat.announce_stopping()
        held = self.processor.held()
        self.processor.stop(self.config.shutdown_timeout)
        for component in self._components:
            if component is not self.heartbeat:
                component.stop()
        # Last, so the server stays listed (as stopping) until its record replaces it. A refused key layout
        # writes nothing more to a keyspace that is not ours.
        self.heartbeat.stop(record=None if self.layout.refusal is not None else self.farewell(held))
        self.acker.stop()
        self.spark.stop()
        for http_server in (self.metrics_server, self.health_server):
            if http_server is not None:
                http_server.shutdown()
                http_server.server_close()
        self.broker.close()
        log.info("worker %s stopped", self.config.server_id)

    def farewell(self, held: list[tuple[Attempt, bool]]) -> dict[str, Any]:
        """The record this server leaves (see ``taskq.queues.engine.server_records``): its last heartbeat, how it ended,
        and what became of each task it held when the shutdown began (``held``: attempt, whether it started)."""
        ended = to_ms(self.broker.clock.now())
        server = self.heartbeat.server_info()
        reason = "stopped by an operator" if self.heartbeat.stopped_by_operator else "SIGTERM or SIGINT"
        server.update(status="stopped", how=GRACEFUL, reason=reason, ended=ended)
        tasks = [
            {"queue": a.queue, "id": a.id, "type": a.task.type, "at": ended, **held_outcome(a, started)}
            for a, started in held
        ]
        return {"server": server, "tasks": tasks}

    def run(self) -> None:
        """Check the keyspace's layout, start, then block until SIGTERM or SIGINT, then stop gracefully. Raises
        LayoutVersionError, before anything starts or after stopping, for a keyspace at another layout."""
        self.layout.check_at_start()
        run_until_signalled(self.start, self.stop, self.stop_requested)
        self.layout.raise_refusal()


#: The kind of an attempt's outcome (``Attempt.ended_as``) -> what a server's record says of the task.
ENDINGS = {
    "success": ("finished", ""),
    "complete": ("finished", ""),
    "retry": ("failed", "to retry"),
    "archive": ("failed", "archived"),
    "requeue": ("requeued", ""),
    "drop": ("dropped", ""),
}


def held_outcome(attempt: Attempt, started: bool) -> dict[str, str]:
    """What became of a task the server held when its shutdown began."""
    if not started and attempt.ended_as in ("", "requeue"):
        return {"outcome": "unstarted", "detail": ""}
    outcome, detail = ENDINGS.get(attempt.ended_as, ("unwritten", ""))
    return {"outcome": outcome, "detail": detail}
