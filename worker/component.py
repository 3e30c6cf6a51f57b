"""Base of the worker's background components: a thread that does one round of work every interval.

A Redis outage never kills a component: the round fails, is logged once per outage, and the next round
comes after a backoff that grows to a few seconds, so the worker carries on when Redis is back.
"""

from __future__ import annotations

import logging
import threading

from taskq.queues.engine import RedisUnavailableError

MAX_BACKOFF = 5.0


class Component:
    name = "component"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def run_once(self) -> None:
        """One round of work. Subclasses implement it."""
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        """Whether the component's thread runs (for the health endpoint)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def log(self) -> logging.Logger:
        """``worker.<name>``: the component's own lines and its rounds' failures and recoveries, so one component's
        lines can be told apart and its level set on its own (a sweeper is named after construction, hence not an
        attribute set once)."""
        return logging.getLogger(f"worker.{self.name}")

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _loop(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            try:
                self.run_once()
                if self._failing:
                    self.log.info("%s: Redis is back", self.name)
                self._failing, backoff = False, 0.0
            except RedisUnavailableError as exc:
                if not self._failing:
                    self.log.warning("%s: %s; backing off", self.name, exc)
                self._failing = True
                backoff = min(MAX_BACKOFF, max(0.1, backoff * 2))
            except Exception:  # a bug in one round must not stop the component for good
                self.log.exception("%s: round failed", self.name)
                backoff = min(MAX_BACKOFF, max(0.1, backoff * 2))
            self._stop.wait(backoff or self.interval)
