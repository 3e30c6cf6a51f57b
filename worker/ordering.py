"""The order in which a worker tries its queues on each fetch.

Weighted (asynq's default): each queue appears in a list as many times as its weight, the list is shuffled and
de-duplicated, so a queue of weight 6 comes first six times as often as one of weight 1, yet none starves.
Strict: always highest weight first; lower queues run only when the higher ones are empty.
"""

from __future__ import annotations

import random


class QueueOrder:
    def __init__(self, queues: dict[str, int], strict: bool = False, rng: random.Random | None = None) -> None:
        self.queues = dict(queues)
        self.strict = strict
        self._rng = rng or random.Random()
        self._by_priority = sorted(self.queues, key=lambda q: -self.queues[q])
        self._tickets = [q for q, weight in self.queues.items() for _ in range(weight)]

    def next(self) -> list[str]:
        if self.strict or len(self.queues) == 1:
            return self._by_priority
        tickets = self._tickets[:]
        self._rng.shuffle(tickets)
        return list(dict.fromkeys(tickets))
