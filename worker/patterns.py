"""Queue patterns: ``taskworker --queues 'tenant-*=1,critical=6'`` serves every queue a glob pattern matches,
including queues created after the worker started.

The candidates are the queues Redis knows (``Keys.queues``: producers add a queue with its first task) and the
defined ones. Each matched queue weighs what its pattern says; when several patterns match, the first one given
wins, and a plain name on the command line wins over every pattern. The set is resolved every round (the
definitions interval) and at once when the subscriber hears a wake-up of an unserved queue that a pattern
matches (its pending list just got its first task), so a new tenant's first task is picked up in milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase

from taskq.queues.engine.worker_store import WorkerStore

from .component import Component
from .queueset import QueueSet


def resolve(names: dict[str, int], patterns: dict[str, int], candidates: Iterable[str]) -> dict[str, int]:
    """The served queues and weights: ``names`` as given, then each candidate a pattern matches (sorted, with the
    weight of the first pattern that matches it)."""
    served = dict(names)
    for queue in sorted(set(candidates) - set(names)):
        weight = next((w for pattern, w in patterns.items() if fnmatchcase(queue, pattern)), None)
        if weight is not None:
            served[queue] = weight
    return served


class QueuePatterns(Component):
    name = "patterns"

    def __init__(
        self,
        store: WorkerStore,
        queue_set: QueueSet,
        names: dict[str, int],
        patterns: dict[str, int],
        defined: Callable[[], Iterable[str]],
        interval: float = 1.0,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(interval)
        self.store = store
        self.queue_set = queue_set
        self.names = dict(names)
        self.patterns = dict(patterns)
        self.defined = defined
        self.on_change = on_change
        # Queues heard of by a wake-up before the producer listed them in Keys.queues (it does so right after the
        # enqueue script, which publishes the wake-up): kept until the listing shows them.
        self._heard: set[str] = set()
        self._lock = threading.Lock()  # the subscriber's thread may resolve while this one does

    def matches(self, queue: str) -> bool:
        return any(fnmatchcase(queue, pattern) for pattern in self.patterns)

    def run_once(self) -> None:
        self.refresh()

    def heard(self, queue: str) -> None:
        """A wake-up of ``queue``, not served yet: serve it now if a pattern matches and it has pending tasks in
        this database (pub/sub channels are shared by all databases of the server)."""
        if queue not in self.queue_set.weights() and self.matches(queue):
            self.refresh(queue)

    def refresh(self, heard: str | None = None) -> bool:
        """Resolve the patterns again; returns True when the served set changed."""
        with self._lock:
            known = self.store.known_queues()
            self._heard -= known
            if heard is not None and heard not in known and self.store.has_pending(heard):
                self._heard.add(heard)
            served = resolve(self.names, self.patterns, known | set(self.defined()) | self._heard)
            if not self.queue_set.update(served):
                return False
        self.log.info(
            "serving %s (patterns %s)",
            ", ".join(f"{q}={w}" for q, w in served.items()),
            ", ".join(f"{p}={w}" for p, w in self.patterns.items()),
        )
        self.store.register_queues(list(served))
        if self.on_change is not None:
            self.on_change()
        return True
