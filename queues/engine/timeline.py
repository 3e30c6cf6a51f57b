"""A task's attempts, read from its transitions (its events): each start (pending -> active) opens an attempt,
under the worker and lease token it names; the next transition out of active closes it with its outcome."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: How the transition that ends an attempt reads on the timeline.
OUTCOMES = {
    "done": "succeeded",
    "completed": "succeeded",
    "retry": "failed, to retry",
    "archived": "failed, archived",
    "pending": "put back (shutdown, or its lease was recovered)",
    "deleted": "deleted",
}


@dataclass
class AttemptRecord:
    number: int
    worker: str
    lease: str
    dequeued: datetime | None  # when a worker leased it
    started: datetime | None = None  # when its handler started (later than dequeued for a prefetched task)
    ended: datetime | None = None
    outcome: str = "running"
    error: str = ""
    ended_by: str = ""  # who wrote the end: the worker, the recoverer, or an operator

    @property
    def seconds(self) -> float | None:
        """How long the handler ran (from the dequeue when the start is not known)."""
        began = self.started or self.dequeued
        if began is None or self.ended is None:
            return None
        return (self.ended - began).total_seconds()


def attempts_of(events: Iterable[Any]) -> list[AttemptRecord]:
    """The attempts of one task from its events (``TaskEvent``s, oldest first)."""
    attempts: list[AttemptRecord] = []
    for event in events:
        if event.to_state == "active":
            attempts.append(AttemptRecord(len(attempts) + 1, event.worker, event.lease, event.at))
        elif event.from_state == "active" and attempts and attempts[-1].ended is None:
            last = attempts[-1]
            last.ended, last.error, last.ended_by = event.at, event.error, event.worker
            last.started = getattr(event, "started", None)
            last.outcome = OUTCOMES.get(event.to_state, event.to_state)
    return attempts
