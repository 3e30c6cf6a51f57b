"""Time as the engine sees it. Injected everywhere so tests can move time instead of sleeping."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that only moves when told to. Thread-safe, for tests."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def set(self, when: float) -> None:
        with self._lock:
            self._now = when


def to_ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def utc_day(seconds: float) -> str:
    """The UTC date, ``YYYY-MM-DD``, that daily counters are keyed by."""
    return _utc_day_number(int(seconds // 86400))


@lru_cache(maxsize=4)
def _utc_day_number(day: int) -> str:
    # Every acknowledgement names today's counter: a string made once a day, not a datetime per call.
    return datetime.fromtimestamp(day * 86400, tz=UTC).strftime("%Y-%m-%d")


def from_ms(ms: int | None) -> datetime | None:
    return None if not ms else datetime.fromtimestamp(ms / 1000, tz=UTC)
