"""Fixtures of the Django tasks backend tests. Self-contained: the Django 6 run (scripts/test-django6.sh) loads
only this conftest (``--confcutdir``), in a venv without the console's apps, under ``tests.djtasks.settings``.

A real Redis database (1-9, flushed around each test) and a real ``manage.py taskworker`` process, started
with the test settings and ``--import tests.djtasks.tasks`` and nothing else: the worker finds the ``@task``
functions by their module path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from taskq.queues.engine import Inspector
from tests.djtasks.settings import TASKS
from tests.djtasks.tasks import SIGNAL_LOG
from tests.waiting import wait_for
from taskq.worker.testing.redis_db import DEFAULT_TEST_REDIS_URL, test_redis_url

ROOT = Path(__file__).resolve().parents[2]
QUEUES = "default,djtasks-mail,djtasks-retry,djtasks-short"


@pytest.fixture(scope="session")
def taskq_redis_url() -> str:
    """The suite's test database (TEST_REDIS_URL, databases 1-9 only), for taskq's own fixtures: ``taskq_redis``
    (from the pytest plugin taskq ships) flushes it around each test."""
    return test_redis_url(os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL, allowed=range(1, 10))


@pytest.fixture
def tasks_settings(settings: Any, taskq_redis: redis.Redis, taskq_redis_url: str) -> Any:
    """The test settings' TASKS on the test database, whatever settings module the run has."""
    settings.REDIS_URL = taskq_redis_url
    settings.TASKS = TASKS
    return settings


@pytest.fixture
def inspector(taskq_redis_url: str, taskq_redis: redis.Redis) -> Iterator[Inspector]:
    with Inspector(taskq_redis_url) as inspector:
        yield inspector


@pytest.fixture
def signal_log(tmp_path: Path) -> Path:
    return tmp_path / "signals.jsonl"


@pytest.fixture
def taskworker(
    tasks_settings: Any, taskq_redis_url: str, inspector: Inspector, signal_log: Path, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker serving the test queues, registered (so it reads them) before the test starts."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.djtasks.settings",
        "REDIS_URL": taskq_redis_url,
        "TASKS_JANITOR_SECONDS": "0.2",
        "TASKS_FORWARDER_SECONDS": "0.2",
        "PYTHONUNBUFFERED": "1",
        SIGNAL_LOG: str(signal_log),
    }
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "taskworker", "--queues", QUEUES, "--import", "tests.djtasks.tasks"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    try:
        wait_for(
            lambda: proc.poll() is not None or inspector.servers(),
            what=f"the worker to register (log: {tmp_path / 'worker.log'})",
        )
        assert proc.poll() is None, (tmp_path / "worker.log").read_text()
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
