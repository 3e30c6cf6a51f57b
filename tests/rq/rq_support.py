"""Helpers of the RQ tests, importable by name (tests/rq is on the path, as for rq_jobs)."""

from __future__ import annotations

from collections.abc import Callable

from tests import waiting


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> object:
    """tests.waiting.wait_for with the RQ worker's longer default limit."""
    return waiting.wait_for(condition, timeout=timeout, interval=0.05, what=what)
