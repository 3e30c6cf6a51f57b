"""What a worker process costs the machine, for its heartbeat: resident memory and CPU share.

Read from ``/proc/self/statm`` and ``os.times()``, so it needs no dependency. The CPU share is the CPU seconds
(user and system) the process spent since the previous sample over the wall seconds that passed meanwhile: 1.0 is
one core busy the whole time, so a threaded worker may go past 1.0 on a machine with several cores.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """The process's resident set size now. Off Linux (no ``/proc``), the peak RSS ``getrusage`` reports is the
    closest figure at hand: never less than the current one."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024  # macOS counts bytes, Linux kibibytes


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class ProcessUsage:
    """Samples the process's RSS and CPU share; each ``sample`` measures the CPU share since the previous one (the
    first, since the object was made). Clocks are injected so tests can move time."""

    def __init__(self, cpu: Callable[[], float] = cpu_seconds, wall: Callable[[], float] = time.monotonic) -> None:
        self.cpu, self.wall = cpu, wall
        self._cpu_at, self._wall_at = cpu(), wall()

    def sample(self) -> dict[str, float | int]:
        """``{"rss": bytes, "cpu": share since the last sample, rounded to 3 places}``."""
        cpu, wall = self.cpu(), self.wall()
        elapsed = wall - self._wall_at
        share = max(0.0, (cpu - self._cpu_at) / elapsed) if elapsed > 0 else 0.0
        self._cpu_at, self._wall_at = cpu, wall
        return {"rss": resident_bytes(), "cpu": round(share, 3)}
