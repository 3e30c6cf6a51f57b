"""The aggregator: combines the due groups of the served queues into one task each (see
``taskq.queues.engine.aggregation``), and reclaims aggregation sets whose aggregator died half-way.

One round per queue: first reclaim expired sets (their tasks go back into their groups), then for each group
whose oldest task has an aggregation function here, cut it while it is due and combine each cut. A group whose
type has no aggregation function in this worker is left to a worker that has one. When the function raises, the
set stays behind and is reclaimed after its deadline, so the tasks are tried again, never lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from taskq.queues.engine import EngineError
from taskq.queues.engine.aggregation import AggregatorRegistry, GroupSettings, GroupStore
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet

from .component import Component
from .queueset import QueueSet

MAX_CUTS = 100  # per group and round, so one busy group cannot hold the round forever


def queue_group_settings(defaults: GroupSettings, policies: PolicySet, queue: str) -> GroupSettings:
    """The queue's definition where it sets a value, the worker's defaults (settings) elsewhere."""
    spec = policies.queues.get(queue)
    if spec is None:
        return defaults
    own: dict[str, Any] = {
        name: value
        for name, value in (
            ("grace", spec.group_grace),
            ("max_delay", spec.group_max_delay),
            ("max_size", spec.group_max_size),
        )
        if value is not None
    }
    return replace(defaults, **own) if own else defaults


class Aggregator(Component):
    name = "aggregator"

    def __init__(
        self,
        broker: Broker,
        queues: QueueSet,
        registry: AggregatorRegistry,
        interval: float,
        settings: Callable[[str], GroupSettings],
        actor: str = "aggregator",
    ) -> None:
        super().__init__(interval)
        self.store = GroupStore(broker, registry, actor)
        self.registry = registry
        self.queues = queues
        self.settings = settings
        self.aggregated = 0  # combined tasks enqueued by this aggregator
        self.reclaimed = 0  # aggregation sets put back into their groups
        self._unserved: set[tuple[str, str]] = set()

    def run_once(self) -> None:
        if not self.registry.types():
            return
        for queue in self.queues.names():
            for set_id, group in self.store.expired_sets(queue):
                self._reclaim(queue, set_id, group)
            for group in self.store.groups(queue):
                self._aggregate(queue, group, self.settings(queue))

    def _reclaim(self, queue: str, set_id: str, group: str) -> None:
        try:
            moved = self.store.reclaim(queue, set_id, group)
        except EngineError as exc:
            if exc.code == "unavailable":
                raise
            return  # finished or reclaimed by another worker meanwhile
        self.reclaimed += 1
        self.log.warning(
            "group %r of %s: aggregation set %s expired (its aggregator stopped); %d task(s) back in the group",
            group,
            queue,
            set_id,
            moved,
        )

    def _aggregate(self, queue: str, group: str, settings: GroupSettings) -> None:
        task_type = self.store.oldest_type(queue, group)
        if task_type is None:
            return
        if self.registry.route(task_type) is None:
            if (queue, task_type) not in self._unserved:
                self._unserved.add((queue, task_type))
                self.log.warning(
                    "group %r of %s: no aggregator for task type %r here; left to another worker",
                    group,
                    queue,
                    task_type,
                )
            return
        for _ in range(MAX_CUTS):
            set_id, taken = self.store.cut(queue, group, settings)
            if not taken:
                return
            try:
                combined = self.store.combine(queue, group, set_id)
            except Exception:
                self.log.exception(
                    "group %r of %s: the aggregation function failed; the %d task(s) go back to the "
                    "group when the set's deadline passes",
                    group,
                    queue,
                    taken,
                )
                return
            try:
                self.store.finish(queue, group, set_id, combined)
            except EngineError as exc:
                if exc.code == "unavailable":
                    raise
                self.log.warning("group %r of %s: %s", group, queue, exc)
                return
            self.aggregated += 1
            self.log.info(
                "group %r of %s: %d task(s) combined into %s (%s)", group, queue, taken, combined.id, combined.type
            )
