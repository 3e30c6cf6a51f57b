"""The two hand-offs between the processor, the acker and the syncer, built before any of them so that none needs
another to exist first (``Server`` wires them; see worker/server.py).

- ``Outbox``: the outcomes the handler threads, the watchdog, the subscriber and the fetch thread hand over, in the
  order they came, to the one acker thread that writes them.
- ``Backlog``: the outcomes the acker could not write because Redis was away, which the syncer's thread retries.

Both are safe to use from any thread: ``Outbox`` is a ``SimpleQueue`` plus a count guarded by a condition,
``Backlog`` a list guarded by a lock.
"""

from __future__ import annotations

import queue
import threading

from .attempt import Attempt, Outcome

Item = tuple[Attempt, Outcome]


class Outbox:
    """Outcomes waiting for the acker. Any thread submits; only the acker's thread takes."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._pending = 0  # submitted and not yet written nor handed to the backlog (guarded by _idle)
        self._idle = threading.Condition()

    def submit(self, attempt: Attempt, outcome: Outcome) -> None:
        attempt.ended_as = outcome.kind
        with self._idle:
            self._pending += 1
        self._items.put((attempt, outcome))

    def close(self) -> None:
        """Tell the acker to end once it has taken what came before."""
        self._items.put(None)

    def take(self, timeout: float) -> Item | None:
        """The next outcome, waiting up to ``timeout`` seconds (queue.Empty when none came); None once closed."""
        return self._items.get(timeout=timeout)

    def take_more(self, limit: int) -> list[Item]:
        """Up to ``limit`` more outcomes that are here already, without waiting. The close mark stays for the next
        ``take``."""
        taken: list[Item] = []
        while len(taken) < limit:
            try:
                item = self._items.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._items.put(None)
                break
            taken.append(item)
        return taken

    def waiting(self) -> int:
        """How many outcomes wait to be taken (approximate while threads submit)."""
        return self._items.qsize()

    def done(self, n: int) -> None:
        """``n`` outcomes taken are written (or in the backlog): wake whoever drains."""
        with self._idle:
            self._pending -= n
            self._idle.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted outcome was written (or handed to the backlog)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)


class Backlog:
    """Outcomes Redis did not take, for the syncer to retry. The acker's and the syncer's threads both add."""

    def __init__(self) -> None:
        self._items: list[Item] = []
        self._lock = threading.Lock()

    def add(self, items: list[Item]) -> None:
        with self._lock:
            self._items += items

    def take_all(self) -> list[Item]:
        with self._lock:
            items, self._items = self._items, []
        return items
