"""taskq's pytest plugin, registered through the ``pytest11`` entry point, so installing taskq loads it.

Every fixture is named ``taskq_*`` so none shadows a project's own; none is used unless a test asks for it, and
loading the plugin changes nothing else. The Redis database comes from ``--taskq-redis-url``, else
``$TASKQ_TEST_REDIS_URL``, else redis://127.0.0.1:6379/9; database 0 is refused. ``taskq_redis`` (and every
fixture built on it) flushes that database, and only it, before and after the test.

Loading the plugin imports no Django: a fixture asks Django for the installed apps only where the tests have
imported Django already.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from taskq.queues.engine import Client, FakeClock, Inspector, RedisUnavailableError, ValidationError, connect
from taskq.queues.engine.broker import Broker
from taskq.worker.discovery import import_app_tasks

from .redis_db import test_redis_url
from .thread import WorkerThread


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--taskq-redis-url",
        default=None,
        help="Redis database the taskq_* fixtures use and flush (not database 0); "
        "default: $TASKQ_TEST_REDIS_URL or redis://127.0.0.1:6379/9",
    )


@pytest.fixture(scope="session")
def taskq_redis_url(pytestconfig: pytest.Config) -> str:
    """The Redis URL the taskq fixtures write to and flush."""
    try:
        return test_redis_url(pytestconfig.getoption("--taskq-redis-url"))
    except ValidationError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture
def taskq_redis(taskq_redis_url: str) -> Iterator[Any]:
    """A redis-py client (``redis.Redis``) on the test database, flushed before and after the test."""
    client = connect(taskq_redis_url)
    broker = Broker(taskq_redis_url, conn=client)  # flushes the database, and closes the client at the end
    try:
        broker.send("taskq_redis", "flushdb")
    except RedisUnavailableError as exc:
        pytest.fail(f"taskq: no Redis at {taskq_redis_url} ({exc.message}); start one or pass --taskq-redis-url")
    yield client
    broker.send("taskq_redis", "flushdb")
    broker.close()


@pytest.fixture
def taskq_clock() -> FakeClock:
    """A FakeClock starting at the current time; it moves only with ``advance(seconds)`` or ``set(when)``."""
    return FakeClock(time.time())


@pytest.fixture
def taskq_client(taskq_redis: Any, taskq_redis_url: str, taskq_clock: FakeClock) -> Iterator[Client]:
    """A Client on the test database that tells time by ``taskq_clock``."""
    with Client(taskq_redis_url, clock=taskq_clock) as client:
        yield client


@pytest.fixture
def taskq_inspector(taskq_redis: Any, taskq_redis_url: str, taskq_clock: FakeClock) -> Iterator[Inspector]:
    """An Inspector on the test database (``get_task``, ``queue_info``, ``list_tasks``...), on ``taskq_clock``."""
    with Inspector(taskq_redis_url, clock=taskq_clock, actor="taskq.testing") as inspector:
        yield inspector


@pytest.fixture
def taskq_worker(taskq_redis: Any, taskq_redis_url: str, taskq_clock: FakeClock) -> Iterator[WorkerThread]:
    """A started worker on the test database, serving the handlers registered with ``@handler`` (in a Django
    project, every installed app's ``tasks`` module is imported first, as ``taskworker`` does) on ``default``
    (``run_until_empty(queue)`` adds other queues), on ``taskq_clock``; stopped at teardown."""
    _import_django_app_tasks()
    with WorkerThread(taskq_redis_url, clock=taskq_clock) as worker:
        yield worker


def _import_django_app_tasks() -> None:
    if "django" not in sys.modules:
        return  # not a Django project (or Django is not in use here): handlers come from the test's imports
    from django.apps import apps  # only where Django is in use: loading the plugin imports no Django

    if apps.ready:
        import_app_tasks([config.name for config in apps.get_app_configs()])


@pytest.fixture
def taskq_settings(request: pytest.FixtureRequest, taskq_redis: Any, taskq_redis_url: str) -> Any:
    """Django projects (needs pytest-django): its ``settings`` with ``REDIS_URL`` on the test database, so
    ``get_client()``, ``handler.enqueue`` and ``enqueue_on_commit`` write where ``taskq_worker`` reads."""
    settings = request.getfixturevalue("settings")
    settings.REDIS_URL = taskq_redis_url
    return settings
