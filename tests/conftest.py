"""Shared fixtures: a real Redis on a test database, flushed around each test.

Tests use TEST_REDIS_URL (default redis://127.0.0.1:6379/9). Only databases 1-9 are allowed: db 0 holds the
demo's data and 10-15 are left to other tools, and a FLUSHDB there would destroy someone's state.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import override_settings

from taskq.console.channel_layers import channel_layers
from taskq.queues import conf, handles
from taskq.queues.engine import FakeClock, Inspector, Registry
from taskq.queues.engine.broker import Broker
from taskq.worker.testing.redis_db import DEFAULT_TEST_REDIS_URL, test_redis_url
from tests.cli.helpers import Seed
from tests.engine.task_state import fake_clock
from tests.worker.worker_support import kill_process
from tests.xdist_isolation import TEST_DATABASES


def pytest_configure(config: pytest.Config) -> None:
    # Tests create users by the hundred (every access matrix, every console page test), and Django's production
    # hasher (PBKDF2, a million rounds) spends 0.3 s of CPU on each password, over a second on a busy two-core CI
    # machine. What these tests check is who may do what, not how a password is stored, so they hash with MD5.
    # Consoles that tests start as subprocesses (daphne, the demo) keep the real settings and their own databases.
    override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]).enable()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis URL tests may write to and flush."""
    # The one allocator, shared with the pytest plugin taskq ships (which only refuses db 0). Under pytest-xdist,
    # tests/xdist_isolation.py has already pointed TEST_REDIS_URL at this worker's own database.
    return test_redis_url(os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL, allowed=TEST_DATABASES)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on the test database, empty at the start of the test and flushed again at the end."""
    client = redis.Redis.from_url(redis_url)
    try:
        client.flushdb()
    except redis.ConnectionError as exc:
        pytest.fail(f"no Redis at {redis_url} ({exc}); start one with: bash scripts/ensure-redis.sh {redis_url}")
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def settings_redis(settings, redis_url: str):
    """Django settings whose REDIS_URL (and the Redis-backed layers derived from it) use the test database."""
    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = channel_layers(redis_url)
    settings.RQ_QUEUES = {"default": {"URL": redis_url}}
    return settings


@pytest.fixture
def redis_down(settings) -> Iterator[Any]:
    """Django settings, and the console's engine handles built again from them, on a Redis where nothing listens."""
    settings.REDIS_URL = "redis://127.0.0.1:1/3"  # nothing listens on port 1: the connection is refused at once
    handles.reset()
    yield settings
    handles.reset()


# -- engine handles shared by the suites (a folder overrides one where its tests need another, and says why) ----


@pytest.fixture
def r(redis_client: redis.Redis) -> redis.Redis:
    """The empty test database."""
    return redis_client


@pytest.fixture
def clock() -> FakeClock:
    """An injected clock at a fixed instant, so nothing waits for real time."""
    return fake_clock()


@pytest.fixture
def broker(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Broker]:
    b = Broker(redis_url, clock=clock)
    yield b
    b.close()


@pytest.fixture
def inspector(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Inspector]:
    """An inspector on the test database, on the test's clock."""
    with Inspector(redis_url, clock=clock, actor="test") as i:
        yield i


@pytest.fixture
def registry() -> Registry:
    """Handlers of the test's own, not the process-wide registry."""
    return Registry()


@pytest.fixture
def engine(settings_redis: Any, redis_client: redis.Redis) -> Iterator[Inspector]:
    """The console's shared engine handles (``taskq.queues.handles``) on the flushed test database."""
    handles.reset()
    yield conf.get_inspector()
    handles.reset()


@pytest.fixture
def seed(engine: Inspector, redis_url: str) -> Iterator[Seed]:
    """Puts tasks in every state the way the engine's scripts do (see ``tests/cli/helpers.py``)."""
    seeder = Seed(redis_url)
    yield seeder
    seeder.close()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Processes a test starts (workers, schedulers, servers); each is killed at teardown if still running."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        kill_process(proc)


@pytest.fixture
def spans() -> Iterator[Any]:
    """The in-memory exporter of the process's OpenTelemetry SDK (tests/tracing/spans.py), empty at the start of
    the test: ``spans.get_finished_spans()`` lists the spans ended since."""
    from tests.tracing.spans import process_exporter  # optional: the SDK, which only the tracing tests need

    exporter = process_exporter()
    exporter.clear()
    yield exporter
    exporter.clear()
