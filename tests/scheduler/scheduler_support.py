"""Constants and helpers shared by the scheduler tests (imported by module name: tests/scheduler is not a
package) and the console's page tests (as ``tests.scheduler.scheduler_support``)."""

from __future__ import annotations

import time
from typing import Any

# 2023-11-14 22:00:00 UTC, a whole hour, so cron ticks land on predictable instants.
START = 1_699_999_200.0


def fire_some(redis_url: str) -> tuple[Any, int]:
    """A scheduler with one code entry (``report:refresh`` on queue ``low``, every 10 s) that has fired three
    times, still heartbeating: the entry and the first tick in milliseconds."""
    from taskq.queues.engine import FakeClock, ScheduleRegistry, schedule
    from taskq.worker.scheduler import build

    registry = ScheduleRegistry()
    entry = schedule("@every 10s", "report:refresh", {"scope": "all"}, registry=registry, queue="low")
    # Near the real time: the page and the CLI read heartbeats against the system clock.
    start = (time.time() // 10) * 10 - 60
    clock = FakeClock(start)
    scheduler = build(redis_url, "tq", registry=registry, clock=clock, heartbeat_interval=3600)
    scheduler.run_once()
    for _ in range(2):
        clock.advance(10)
        scheduler.run_once()
    scheduler.store.broker.close()
    return entry, int(start * 1000)
