"""Helpers for testing code that enqueues and handles tasks, usable with or without pytest.

    from taskq.worker.testing import WorkerThread, test_redis_url

    with WorkerThread(test_redis_url()) as worker:
        client.enqueue("email:deliver", {"to": "ada@example.com"})
        summary = worker.run_until_empty("default")
        assert (summary.succeeded, summary.failed) == (1, 0)

The pytest plugin (``taskq.worker.testing.pytest_plugin``, loaded automatically once taskq is installed) wraps these
in fixtures: ``taskq_redis_url``, ``taskq_redis``, ``taskq_clock``, ``taskq_client``, ``taskq_inspector``,
``taskq_worker`` and, in Django projects, ``taskq_settings``. Imports no Django.
"""

from __future__ import annotations

from .redis_db import DEFAULT_TEST_REDIS_URL, test_redis_url
from .thread import RunSummary, WorkerThread, run_until_empty

__all__ = ["DEFAULT_TEST_REDIS_URL", "RunSummary", "run_until_empty", "test_redis_url", "WorkerThread"]
