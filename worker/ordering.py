"""The order in which a worker tries its queues on each fetch.

Weighted (asynq's default): each queue appears in a list as many times as its weight, the list is shuffled and
de-duplicated, so a queue of weight 6 comes first six times as often as one of weight 1, yet none starves.
Strict: always in priority order, lower queues only when the higher ones are empty. The order is the queues'
rank (from their definitions; lower first), then their weight (higher first).

The order follows the worker's shared ``QueueSet``: it is rebuilt whenever the set changes.
"""

from __future__ import annotations

import random

from .queueset import QueueSet, Served


class QueueOrder:
    def __init__(
        self, queues: dict[str, int] | QueueSet, strict: bool = False, rng: random.Random | None = None
    ) -> None:
        self.queue_set = queues if isinstance(queues, QueueSet) else QueueSet(queues)
        self.strict = strict
        self._rng = rng or random.Random()
        self._generation = -1
        self._by_priority: list[str] = []
        self._tickets: list[str] = []

    def _rebuild(self, served: Served) -> None:
        weights = served.weights
        self._by_priority = sorted(weights, key=lambda q: (served.ranks.get(q, 0), -weights[q]))
        self._tickets = [q for q, weight in weights.items() for _ in range(weight)]
        self._generation = served.generation

    def first(self) -> str | None:
        """The queue that ``next()`` would put first, drawn alike (a weighted draw, or the top priority when strict)
        without building the whole order; safe from any thread. None when no queue is served."""
        served = self.queue_set.snapshot()
        if served.generation != self._generation:
            self._rebuild(served)
        if self.strict or len(self._by_priority) <= 1:
            return self._by_priority[0] if self._by_priority else None
        return self._rng.choice(self._tickets)

    def next(self) -> list[str]:
        served = self.queue_set.snapshot()
        if served.generation != self._generation:
            self._rebuild(served)
        if self.strict or len(self._by_priority) <= 1:
            return list(self._by_priority)
        tickets = self._tickets[:]
        self._rng.shuffle(tickets)
        return list(dict.fromkeys(tickets))
