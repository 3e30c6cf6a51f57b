"""Waiting in tests without timing anything: poll a condition until it holds, fail loudly after a generous limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from taskq.queues.engine import Inspector, TaskNotFoundError

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
