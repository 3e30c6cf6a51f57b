"""Fixtures of the engine tests. The database comes from the repository's ``redis_url`` / ``redis_client``
fixtures (TEST_REDIS_URL, a database between 1 and 9), flushed before and after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from queues.engine import FakeClock
from queues.engine.broker import Broker

from .dbstate import fake_clock


@pytest.fixture
def r(redis_client: redis.Redis) -> redis.Redis:
    """The empty test database."""
    return redis_client


@pytest.fixture
def clock() -> FakeClock:
    return fake_clock()


@pytest.fixture
def broker(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Broker]:
    b = Broker(redis_url, clock=clock)
    yield b
    b.close()
