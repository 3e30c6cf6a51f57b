"""Fixtures of the worker tests: servers with short intervals on the test database, a fake clock shared by the
servers, the client and the inspector (so time is advanced instead of slept), and started processes that are
killed at teardown.

Every server gets its own fresh ``Registry`` (never the global one), is started by ``make_server`` and
stopped at teardown. Tests poll with generous deadlines (``worker_support.wait_for``); none asserts how long
anything took.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from worker_support import FAST, running_servers

from taskq.queues.engine import Client, FakeClock, Registry
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Client]:
    """A taskq Client (not pytest-django's) on the test's clock, which the servers and the inspector share."""
    with Client(redis_url, clock=clock) as c:
        yield c


@pytest.fixture
def worker_pool() -> str:
    """The pool of ``make_server``'s servers unless a test names one: the thread pool. A module whose tests must
    hold on every pool overrides this fixture with a parametrised one (over ``worker_support.POOLS``)."""
    return "thread"


@pytest.fixture
def make_server(
    r: redis.Redis, redis_url: str, registry: Registry, clock: FakeClock, worker_pool: str
) -> Iterator[Callable[..., Server]]:
    """``make_server(**config)`` builds a Server on the test database with short intervals and starts it
    (``start=False`` to start it yourself); every server is stopped at teardown."""
    with running_servers() as launch:

        def make(start: bool = True, registry_: Registry | None = None, **overrides: Any) -> Server:
            config = WorkerConfig(redis_url=redis_url, **{**FAST, "pool": worker_pool, **overrides})
            server = Server(config, registry_ or registry, clock=clock)
            if start:
                return launch(server)
            original = server.start

            def start_and_track() -> None:  # the test starts it when it wants; teardown still stops it
                server.start = original  # type: ignore[method-assign]
                launch(server)

            server.start = start_and_track  # type: ignore[method-assign]
            return server

        yield make
