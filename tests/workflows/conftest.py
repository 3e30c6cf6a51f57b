"""Fixtures of the group and workflow tests: the empty test database, a FakeClock, and a broker, client and
inspector sharing it. Worker fixtures (``make_server``) come from the worker tests' conftest pattern, rebuilt here
with an aggregator registry of the test's own."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from taskq.queues.engine import AggregatorRegistry, Client, FakeClock, Registry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "worker"))

from worker_support import FAST, running_servers

from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Client]:
    """A taskq Client on the test's clock, without the admin's policies (these tests define none)."""
    with Client(redis_url, clock=clock, policies=False) as c:
        yield c


@pytest.fixture
def aggregators() -> AggregatorRegistry:
    return AggregatorRegistry()


@pytest.fixture
def make_server(
    r: redis.Redis, redis_url: str, registry: Registry, aggregators: AggregatorRegistry, clock: FakeClock
) -> Iterator[Callable[..., Server]]:
    """``make_server(**config)``: a started Server on the test database with short intervals, the test's handler
    and aggregator registries and its FakeClock; stopped at teardown."""

    def build(**overrides: Any) -> Server:
        config = WorkerConfig(redis_url=redis_url, **{**FAST, "aggregator_interval": 0.05, **overrides})
        return Server(config, registry, clock=clock, aggregators=aggregators)

    with running_servers() as start:
        yield lambda **overrides: start(build(**overrides))
