"""The asynq worker's composition root: builds every part with what it needs, in order, and runs them until
SIGTERM or SIGINT, as asynq's ``Server`` does (server.go).

Order: the broker and the store; the syncer (the runner hands it the writes Redis did not take); the runner; then
the parts that read the runner (the heartbeat, the deadline watch, the cancel listener) and the loops that need
only the store (forwarder, janitor, recoverer). No part is handed another after it is built.

Shutdown: the heartbeat reports the server as closed, no task is fetched any more, the running ones get the
shutdown timeout and then go back to pending, the loops stop, and the server's keys are cleared. SIGKILL needs no
code: the leases run out and the recoverer of any server, Go or Python, retries the tasks.
"""

from __future__ import annotations

import logging

from taskq.queues.engine import Clock, Registry, registry
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.broker import Broker
from taskq.worker.component import Component
from taskq.worker.config import WorkerConfig
from taskq.worker.ordering import QueueOrder
from taskq.worker.stop_signals import run_until_signalled

from .cancel_listener import CancelListener
from .server_state import Identity, ServerHeartbeat
from .task_runner import TaskRunner
from .timings import Timings
from .upkeep import DeadlineWatch, Forwarder, Janitor, Recoverer, Syncer

log = logging.getLogger("worker")


class AsynqRuntime:
    """A worker serving asynq queues; see the module's docstring."""

    def __init__(
        self,
        config: WorkerConfig,
        registry: Registry = registry,
        clock: Clock | None = None,
        identity: Identity | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.timings = timings = Timings.of(config)
        self.identity = identity or Identity()
        self.broker = Broker(config.redis_url, clock=clock)
        self.store = AsynqWorkerStore(self.broker)
        clock = self.broker.clock
        queues = list(config.queues)
        self.syncer = Syncer(timings.heartbeat, clock)
        self.runner = TaskRunner(
            self.store,
            registry,
            QueueOrder(config.queues, config.strict),
            config.concurrency,
            timings,
            clock,
            self.identity.server_id,
            self.syncer.add,
        )
        self.heartbeat = ServerHeartbeat(
            self.store, self.runner, self.identity, config.queues, config.strict, config.concurrency, timings, clock
        )
        self.components: list[Component] = [
            self.heartbeat,
            DeadlineWatch(self.runner),
            CancelListener(self.store, self.runner),
            self.syncer,
            Forwarder(self.store, queues, timings.forwarder),
            Janitor(self.store, queues, timings.janitor),
            Recoverer(self.store, queues, registry, timings.recoverer, timings.clock_skew, clock),
        ]

    def start(self) -> None:
        for component in self.components:
            component.start()
        self.runner.start()
        log.info(
            "asynq worker %s serving %s (%s, concurrency %d, handlers: %s)",
            self.identity.server_id,
            ", ".join(f"{q}={w}" for q, w in self.config.queues.items()),
            "strict" if self.config.strict else "weighted",
            self.config.concurrency,
            ", ".join(self.registry.types()) or "none",
        )

    def stop(self) -> None:
        log.info("stopping: waiting up to %g s for running tasks", self.config.shutdown_timeout)
        self.heartbeat.closing()
        self.runner.stop(self.config.shutdown_timeout)
        for component in self.components:
            component.stop()
        try:
            self.heartbeat.clear()
        except Exception as exc:  # Redis away: the keys expire with their TTL
            log.warning("could not clear the server's keys: %s", exc)
        self.broker.close()
        log.info("asynq worker %s stopped", self.identity.server_id)

    def run(self) -> None:
        """Start, block until SIGTERM or SIGINT, then stop gracefully."""
        run_until_signalled(self.start, self.stop)
