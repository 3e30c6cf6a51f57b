"""What keeps two pytest-xdist worker processes (``-n 2``, as ``make test`` runs the suite) out of each other's way.

Loaded by name from pyproject's ``addopts`` (``-p tests.xdist_isolation``), so its hook runs before pytest-django
imports the settings, which read REDIS_URL once, and before any conftest.

- Redis: each worker gets a database of its own (``taskq.worker.testing.redis_db.xdist_worker_url``: gw0 keeps
  TEST_REDIS_URL's, gw1 the one below it...). TEST_REDIS_URL is rewritten for the worker, and REDIS_URL with it
  when it named the same database (the Makefile sets both), so the settings, every fixture and every worker,
  console or scheduler subprocess a test starts all use the worker's database.
- Ports: a test that scans a fixed range for a free port (``tests.ports.free_port``) scans only this worker's
  share of it (``worker_share``), so two workers never both find one port free and both start a server on it.
- Folders that must not be split run on one worker, in one piece (``GROUPED_FOLDERS``, scheduled by
  ``FolderGroups`` under ``--dist loadgroup``); every other test goes to whichever worker is free.

Without xdist (no ``PYTEST_XDIST_WORKER`` in the environment) nothing here changes anything.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from taskq.queues.engine import ValidationError
from taskq.worker.testing.redis_db import DEFAULT_TEST_REDIS_URL, xdist_worker_url

#: The databases this suite may flush: 0 holds the demo's data, 10-15 are left to other tools.
TEST_DATABASES = range(1, 10)

#: Folders of tests/ whose tests run on one xdist worker, one after another. The topologies listen on fixed ports
#: for the whole session, so a second worker's would find them taken; the Spark tests share one session, whose JVM
#: takes seconds to start and a gigabyte; the chaos tests kill processes and hold leases to their limits, and two
#: of them at once would each count the other's load as their own. Longest first: they are handed out in this order.
GROUPED_FOLDERS = ("spark", "topology", "chaos")


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


def folder_group(nodeid: str) -> str | None:
    """The group of a test by its node id (``tests/spark/test_pipeline.py::test_x`` is in "spark"), or None."""
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in GROUPED_FOLDERS else None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without xdist (scripts/test-django6.sh) never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, xdist's group scheduler with each of ``GROUPED_FOLDERS`` as one group.

    Not ``xdist_group`` marks: pytest 9.2 ignores the node id suffix through which xdist 3.8 passes them on, and the
    groups fall apart silently (pytest-xdist issue 1386). The scheduler reads the folder from the node id instead.

    Each worker gets the other tests in pytest-django's order (the tests in a rolled-back transaction before those
    that flush the database, which also removes what migrations wrote, such as the console's groups), and the
    groups only after them: a group sent out first would run its flushing tests before the rest of its worker's."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    config.option.loadscopereorder = False  # xdist would otherwise send the largest work units (the groups) first

    class FolderGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return folder_group(nodeid) or super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for folder in GROUPED_FOLDERS:  # behind every other test, in this order among themselves
                if folder in self.workqueue:
                    self.workqueue.move_to_end(folder)
            super()._assign_work_unit(node)

    return FolderGroups(config, log)


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
