"""Where handlers run: sync handlers on a pool of threads, async handlers on one event loop in its own thread.

Both are bounded by the processor's capacity (``--concurrency``), not by themselves: the processor only
fetches a task when a slot is free, so neither ever holds more than that many attempts.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from .attempt import Attempt


class ThreadPool:
    """Threads started on demand up to ``size``, each taking attempts from one shared queue."""

    def __init__(self, size: int, run: Callable[[Attempt], None]) -> None:
        self.size = size
        self._run = run
        self._jobs: queue.SimpleQueue[Attempt | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, attempt: Attempt) -> None:
        with self._lock:
            if self._idle == 0 and len(self._threads) < self.size:
                thread = threading.Thread(target=self._work, name=f"handler-{len(self._threads) + 1}", daemon=True)
                self._threads.append(thread)
                self._idle += 1
                thread.start()
            self._idle -= 1
        self._jobs.put(attempt)

    def _work(self) -> None:
        while True:
            attempt = self._jobs.get()
            if attempt is None:
                return
            try:
                self._run(attempt)
            finally:
                with self._lock:
                    self._idle += 1

    def stop(self) -> None:
        """Let idle threads end; a thread stuck in a handler cannot be stopped and is left to the process exit."""
        for _ in self._threads:
            self._jobs.put(None)


class LoopThread:
    """One asyncio event loop in a thread of its own, for async handlers."""

    def __init__(self, run: Callable[[Attempt], Coroutine[Any, Any, None]]) -> None:
        self._run = run
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="async-handlers", daemon=True)
        self._started = False
        self._starting = threading.Lock()  # the fetch thread and the acker (fetch-on-ack) both submit

    def submit(self, attempts: list[Attempt]) -> None:
        """Start a batch of attempts with one cross-thread call."""
        if not self._started:
            with self._starting:
                if not self._started:
                    self._thread.start()
                    self._started = True
        self.loop.call_soon_threadsafe(self.spawn, attempts)

    def spawn(self, attempts: list[Attempt]) -> None:
        """Start attempts as tasks of the loop; only from the loop's own thread."""
        for attempt in attempts:
            attempt.loop = self.loop
            attempt.future = self.loop.create_task(self._run(attempt))

    def stop(self, timeout: float = 2.0) -> None:
        if self._started:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
