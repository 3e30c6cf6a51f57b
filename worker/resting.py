"""The queues a worker leaves alone until their rate limit admits a start: queue -> the engine time the dequeue
script named for its next start.

Two threads write it: the fetch thread, from what each dequeue was told, and the acker's thread, from what an ack
that leased the next tasks (fetch-on-ack) was told. The fetch thread reads it before each dequeue and to size its
idle wait; the handler threads read it to decide whether a finished task's slot goes to the acker. So writers take
the lock and publish a new dict each time (copy on write), and readers take the dict of the moment without the
lock: one that is never changed after it is published, so a reader never sees it change under it.
"""

from __future__ import annotations

import threading


class RestingQueues:
    """Rate-limit windows by queue; safe to use from any thread (see the module's docstring)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}  # replaced, never changed in place
        self._lock = threading.Lock()  # taken by writers only

    def rest(self, queue: str, until: float) -> None:
        """Leave ``queue`` alone until ``until`` (engine time)."""
        with self._lock:
            self._until = {**self._until, queue: until}

    def forget_opened(self, now: float) -> None:
        """Drop the windows that have opened by ``now`` (also of queues no longer served, never visited again)."""
        if not any(until <= now for until in self._until.values()):
            return
        with self._lock:
            self._until = {queue: until for queue, until in self._until.items() if until > now}

    def __contains__(self, queue: str) -> bool:
        return queue in self._until

    def soonest(self) -> float | None:
        """The engine time the first window opens, or None when no queue rests."""
        until = self._until
        return min(until.values()) if until else None
