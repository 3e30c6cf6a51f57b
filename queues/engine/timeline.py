"""A task's attempts, read from its transitions (its events): each start (pending -> active) opens an attempt,
under the worker and lease token it names; the next transition out of active closes it with its outcome."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: How far apart the clocks of two hosts may be (ms). A task's first event carries its creation time and its
#: latest its ``since``, exactly (the same script call writes both); the events between them were timed by other
#: hosts (workers), so a read of a task's history looks this much beyond that window. Leases already assume
#: clocks agree to within seconds (a 30 s lease ends by the recoverer's clock).
CLOCK_SLACK_MS = 5_000


def event_window(created: datetime | None, last_move: datetime | None) -> tuple[int, int] | None:
    """The epoch-ms span, widened by ``CLOCK_SLACK_MS``, that holds every event of a task created at ``created``
    whose last move was at ``last_move``; None when either is unknown (a task from before ``since`` was kept)."""
    if created is None or last_move is None:
        return None
    first, last = round(created.timestamp() * 1000), round(last_move.timestamp() * 1000)
    return min(first, last) - CLOCK_SLACK_MS, max(first, last) + CLOCK_SLACK_MS


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
    trace: Any = None  # the trace the attempt joined, where the console knows it (console/trace_links.py)

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
