"""Helpers of the worker tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from queues.engine import Inspector, TaskNotFoundError

WAIT = 15.0  # generous: a loaded CI box must not fail a correct test


def wait_for(condition: Callable[[], Any], timeout: float = WAIT, interval: float = 0.02, what: str = "") -> Any:
    """Poll ``condition`` until it returns something truthy, and return that; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or condition}")
        time.sleep(interval)


def state_of(inspector: Inspector, queue: str, task_id: str) -> str | None:
    """The task's state, or None when it no longer exists."""
    try:
        return inspector.get_task(queue, task_id).state
    except TaskNotFoundError:
        return None


FAST = dict(
    concurrency=4,
    lease=2.0,
    heartbeat_interval=0.2,
    recoverer_interval=0.3,
    clock_skew=0.2,
    forwarder_interval=0.1,
    janitor_interval=0.2,
    shutdown_timeout=0.5,
    idle_wait=0.2,
)


# -- processes ------------------------------------------------------------------------------------------------


def free_port(start: int = 6391) -> int:
    for port in range(start, start + 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def kill_process(proc: subprocess.Popen, term_timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it does not exit; only the process we started."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(term_timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "REDIS_URL": redis_url,
        "TASKS_LEASE_SECONDS": "2",
        "TASKS_RECOVERER_SECONDS": "0.5",
        "TASKS_CLOCK_SKEW_SECONDS": "0.2",
        "TASKS_FORWARDER_SECONDS": "0.2",
        "TASKS_SHUTDOWN_TIMEOUT": "2",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env
