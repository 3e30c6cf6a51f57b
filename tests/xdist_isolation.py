"""What keeps two pytest-xdist worker processes (``-n 2``, as ``make test`` runs the suite) out of each other's way.

Loaded by name from pyproject's ``addopts`` (``-p tests.xdist_isolation``), so its hook runs before pytest-django
imports the settings, which read REDIS_URL once, and before any conftest.

- Redis: each worker gets a database of its own (``worker.testing.redis_db.xdist_worker_url``: gw0 keeps
  TEST_REDIS_URL's, gw1 the one below it...). TEST_REDIS_URL is rewritten for the worker, and REDIS_URL with it
  when it named the same database (the Makefile sets both), so the settings, every fixture and every worker,
  console or scheduler subprocess a test starts all use the worker's database.
- Ports: a test that scans a fixed range for a free port (``tests.ports.free_port``) scans only this worker's
  share of it (``worker_share``), so two workers never both find one port free and both start a server on it.
- Whatever needs fixed ports for a whole session (the Redis Cluster and Sentinel topologies) or must not overlap
  itself is kept on one worker with ``xdist_group`` marks and ``--dist loadgroup`` (see tests/conftest.py).

Without xdist (no ``PYTEST_XDIST_WORKER`` in the environment) nothing here changes anything.
"""

from __future__ import annotations

import os

import pytest

from queues.engine import ValidationError
from worker.testing.redis_db import DEFAULT_TEST_REDIS_URL, xdist_worker_url

#: The databases this suite may flush: 0 holds the demo's data, 10-15 are left to other tools.
TEST_DATABASES = range(1, 10)


def worker_index() -> tuple[int, int]:
    """This process's xdist worker number and the number of workers: (0, 1) outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return (int(worker.removeprefix("gw")) if worker else 0), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def worker_share(ports: range) -> range:
    """The slice of ``ports`` that is this xdist worker's alone (all of it outside xdist)."""
    index, count = worker_index()
    size = len(ports) // count
    if size == 0:
        raise RuntimeError(f"ports {ports.start}-{ports.stop - 1} are too few to share among {count} xdist workers")
    return ports[index * size : (index + 1) * size]


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    configured = os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    try:
        url = xdist_worker_url(configured, worker, allowed=TEST_DATABASES)
    except ValidationError as exc:
        raise pytest.UsageError(str(exc)) from None
    if os.environ.get("REDIS_URL") == configured:
        os.environ["REDIS_URL"] = url
    os.environ["TEST_REDIS_URL"] = url
