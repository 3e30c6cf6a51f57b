"""The definitions watcher: follows the queue definitions and policies the admin mirrors into Redis, so a worker
picks up new queues, weights, ranks, concurrency caps, rate limits and archive limits without a restart.

A worker started without ``--queues`` serves the defined queues (``"default"`` while none is defined); with
``--queues`` the command line fixes the queues and weights, and only the caps and rate limits of defined queues
apply (they hold across every worker that serves the queue, whoever started it). One GET of the version counter per
round; the whole set is read again only when it moved.
"""

from __future__ import annotations

from collections.abc import Callable

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore
from taskq.queues.engine.transitions import ArchiveLimits
from taskq.queues.engine.worker_store import WorkerStore

from .component import Component
from .config import WorkerConfig
from .queueset import QueueSet


class DefinitionWatcher(Component):
    name = "definitions"

    def __init__(
        self,
        broker: Broker,
        store: WorkerStore,
        queue_set: QueueSet,
        config: WorkerConfig,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config.definitions_interval)
        self.policy_store = PolicyStore(broker)
        self.store = store
        self.queue_set = queue_set
        # Without --queues the worker follows the definitions; with it, the command line's queues stand.
        self.follow = config.follow_definitions
        self.fallback = dict(config.queues)
        self.on_change = on_change
        self.policies = PolicySet()
        self._loaded = False

    def run_once(self) -> None:
        if self._loaded and self.policy_store.version() == self.policies.version:
            return
        self.policies = self.policy_store.read()
        self._loaded = True
        self.apply(self.policies)

    def apply(self, policies: PolicySet) -> None:
        specs = policies.queues
        caps = {name: spec.concurrency_cap for name, spec in specs.items() if spec.concurrency_cap}
        rates = {name: spec.rate for name, spec in specs.items() if spec.rate_limit}
        if not self.follow:
            self.queue_set.update(caps=caps, rates=rates)
            return
        if specs:
            weights = {name: spec.weight for name, spec in sorted(specs.items())}
            ranks = {name: spec.rank for name, spec in specs.items()}
        else:
            weights, ranks = self.fallback, {}
        if self.queue_set.update(weights, ranks, caps, rates):
            self.log.info(
                "serving %s (definitions version %d)",
                ", ".join(f"{q}={w}" for q, w in weights.items()),
                policies.version,
            )
            self.store.register_queues(list(weights))
            if self.on_change is not None:
                self.on_change()

    def archive_limits(self, queue: str) -> ArchiveLimits:
        """The queue's archive limits from the retention policies, as last read."""
        return self.policies.archive_limits(queue)
