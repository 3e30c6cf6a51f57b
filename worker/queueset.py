"""The queues a worker serves, shared by every component that walks them (processor, subscriber, forwarder,
janitor, recoverer, heartbeat). The definitions watcher replaces the set while the worker runs; readers take an
immutable snapshot, so a round never sees half an update."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from taskq.queues.engine.transitions import RateLimit


@dataclass(frozen=True)
class Served:
    """One version of the set. ``generation`` grows with every change, so a reader knows when to rebuild."""

    weights: dict[str, int]
    ranks: dict[str, int] = field(default_factory=dict)
    caps: dict[str, int] = field(default_factory=dict)
    rates: dict[str, RateLimit] = field(default_factory=dict)
    generation: int = 0

    @property
    def names(self) -> list[str]:
        return list(self.weights)


class QueueSet:
    """Thread-safe holder of the current ``Served`` set."""

    def __init__(
        self,
        weights: dict[str, int],
        ranks: dict[str, int] | None = None,
        caps: dict[str, int] | None = None,
        rates: dict[str, RateLimit] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._served = Served(dict(weights), dict(ranks or {}), dict(caps or {}), dict(rates or {}))

    def snapshot(self) -> Served:
        with self._lock:
            return self._served

    def names(self) -> list[str]:
        return self.snapshot().names

    def weights(self) -> dict[str, int]:
        return dict(self.snapshot().weights)

    def cap(self, queue: str) -> int:
        return self.snapshot().caps.get(queue, 0)

    def rate(self, queue: str) -> RateLimit | None:
        return self.snapshot().rates.get(queue)

    def update(
        self,
        weights: dict[str, int] | None = None,
        ranks: dict[str, int] | None = None,
        caps: dict[str, int] | None = None,
        rates: dict[str, RateLimit] | None = None,
    ) -> bool:
        """Replace what is given; returns True when anything changed (and the generation moved)."""
        with self._lock:
            old = self._served
            new = Served(
                dict(old.weights if weights is None else weights),
                dict(old.ranks if ranks is None else ranks),
                dict(old.caps if caps is None else caps),
                dict(old.rates if rates is None else rates),
                old.generation + 1,
            )
            if (new.weights, new.ranks, new.caps, new.rates) == (old.weights, old.ranks, old.caps, old.rates):
                return False
            self._served = new
            return True
