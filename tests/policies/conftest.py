"""Fixtures of the policy and admin tests: the Django settings point at the test Redis database (flushed around
each test), servers run in-process with short intervals and their own Registry, and are stopped at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues import handles
from taskq.queues.engine import Client, Inspector
from tests.worker.worker_support import FAST as WORKER_FAST
from tests.worker.worker_support import running_servers
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

FAST = {**WORKER_FAST, "definitions_interval": 0.1}  # the worker tests' timings, definitions followed fast
from tests.waiting import WAIT, wait_for  # noqa: E402,F401 - the policy tests import them from here


@pytest.fixture
def r(redis_client: redis.Redis, settings_redis: Any) -> Iterator[redis.Redis]:
    """The empty test database, also the Redis of the Django settings (so signals and the admin use it)."""
    handles.reset()
    yield redis_client
    handles.reset()


@pytest.fixture
def client(r: redis.Redis, redis_url: str) -> Iterator[Client]:
    with Client(redis_url, policy_refresh=0.0) as c:  # check the policies' version on every enqueue
        yield c


@pytest.fixture
def inspector(r: redis.Redis, redis_url: str) -> Iterator[Inspector]:
    """On the real clock, re-reading the mirrored definitions at every call (not the root's inspector)."""
    i = Inspector(redis_url, actor="test")
    i.policies.refresh = 0.0
    yield i
    i.broker.close()


@pytest.fixture
def mirror(django_capture_on_commit_callbacks: Any) -> Callable[[Callable[[], Any]], Any]:
    """``mirror(lambda: Model.objects.create(...))``: run a database change and the mirroring that its commit
    triggers (the test's transaction never commits, so the on-commit callbacks are run by hand)."""

    def run(change: Callable[[], Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return change()

    return run


@pytest.fixture
def make_server(r: redis.Redis, redis_url: str) -> Iterator[Callable[..., Server]]:
    """``make_server(registry, **config)``: a started Server on the test database; stopped at teardown."""
    with running_servers() as start:
        yield lambda registry, **overrides: start(
            Server(WorkerConfig(redis_url=redis_url, **{**FAST, **overrides}), registry)
        )
