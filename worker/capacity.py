"""The worker's handler slots, counted: the fetch thread takes them, any thread gives them back."""

from __future__ import annotations

import threading


class Capacity:
    """Free handler slots. Only the fetch thread takes; any thread gives back."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._nudged = False
        self._cond = threading.Condition()

    def wait_free(self, timeout: float) -> int:
        """Wait for a free slot, or for a nudge (then there may be none), at most ``timeout`` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: self._free > 0 or self._nudged, timeout)
            self._nudged = False
            return self._free

    def nudge(self) -> None:
        """Wake the fetch thread although no slot is free: the prefetched attempts run low. Every handler that takes a
        prefetched attempt while they run low nudges, so a nudge already pending is left as it is (a read without the
        lock: at worst one more nudge) rather than the lock taken and the fetch thread woken again for each."""
        if self._nudged:
            return
        with self._cond:
            self._nudged = True
            self._cond.notify_all()

    def take(self, n: int) -> None:
        with self._cond:
            self._free -= n

    def release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._free == self.size, timeout)

    @property
    def busy(self) -> int:
        return self.size - self._free
