"""Fixtures of the scheduler tests: the flushed test database, a FakeClock that tests move instead of sleeping,
and schedulers built on it with their own registry of code entries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from scheduler_support import START

from taskq.queues.engine import FakeClock, ScheduleRegistry
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.scheduler_store import SchedulerStore
from taskq.worker.scheduler import Scheduler


@pytest.fixture
def clock() -> FakeClock:
    """Not the root's instant: the schedules' tests count cron ticks from START, a whole hour."""
    return FakeClock(START)


@pytest.fixture
def registry() -> ScheduleRegistry:
    return ScheduleRegistry()


@pytest.fixture
def make_store(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Callable[..., SchedulerStore]]:
    brokers: list[Broker] = []

    def make(**options: Any) -> SchedulerStore:
        broker = Broker(redis_url, clock=clock)
        brokers.append(broker)
        return SchedulerStore(broker, **options)

    yield make
    for broker in brokers:
        broker.close()


@pytest.fixture
def store(make_store: Callable[..., SchedulerStore]) -> SchedulerStore:
    return make_store()


@pytest.fixture
def make_scheduler(make_store: Callable[..., SchedulerStore], registry: ScheduleRegistry) -> Callable[..., Scheduler]:
    """``make_scheduler(**options)``: a Scheduler (not started: tests call run_once) on its own connection."""
    counter = iter(range(1, 1000))

    def make(**options: Any) -> Scheduler:
        options.setdefault("scheduler_id", f"sched-{next(counter)}")
        return Scheduler(options.pop("store", None) or make_store(), options.pop("registry", registry), **options)

    return make
