"""Helpers of the RQ tests, importable by name (tests/rq is on the path, as for rq_jobs)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> object:
    """Poll ``condition`` until it returns something truthy and return that; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or condition}")
        time.sleep(0.05)
