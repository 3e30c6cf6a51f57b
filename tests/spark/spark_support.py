"""Helpers of the Spark tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests import waiting
from tests.waiting import state_of  # noqa: F401 - the suites import it from here
from tests.worker.worker_support import FAST as WORKER_FAST

WAIT = 60.0  # generous: the first Spark job of a session starts a JVM on a loaded 2-core box


def wait_for(condition: Callable[[], Any], timeout: float = WAIT, what: str = "") -> Any:
    """tests.waiting.wait_for with Spark's longer default limit."""
    return waiting.wait_for(condition, timeout=timeout, interval=0.05, what=what)


# The worker tests' timings, made slower where Spark's real time needs it: fewer slots, longer leases and grace.
FAST = {
    **WORKER_FAST,
    "concurrency": 2,
    "lease_seconds": 5.0,
    "heartbeat_interval": 0.3,
    "recoverer_interval": 1.0,
    "clock_skew": 0.5,
    "janitor_interval": 0.5,
    "shutdown_timeout": 2.0,
}

# The session the tests share: one core, no UI, few shuffle partitions, small memory.
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
}
