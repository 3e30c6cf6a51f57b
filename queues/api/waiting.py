"""The long polls a console process lets wait at once (``TASKS_API_MAX_WAITERS``), and the threads they wait on.

A consume with a ``timeout`` blocks a thread for up to that long (the engine's consumer is synchronous). Those
threads are a pool of their own, never a request thread or the event loop's default executor, and exactly as
many as the limit: a consume that finds every one taken is refused at once with 429 ``too_many_waiters`` and
``Retry-After``, rather than queued behind the others (its wait would start late and could outlast its own
timeout) or let through to use more Redis connections than the consumer's pool was sized for.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.http import JsonResponse

from taskq.queues.engine.quoting import shown
from taskq.queues.engine.remote_consumer import MAX_WAITERS

from .http import error_response

T = TypeVar("T")

SETTING = "TASKS_API_MAX_WAITERS"
RETRY_AFTER = 1  # seconds a refused consume is told to wait before it polls again


class Waiters:
    """``Waiters(limit)``: runs up to ``limit`` waiting consumes at once, each on a thread of its own."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_WAITERS:
            raise ImproperlyConfigured(f"{SETTING} must be an integer from 1 to {MAX_WAITERS}, got {shown(limit)}")
        self.limit = limit
        self._places = threading.BoundedSemaphore(limit)
        self._threads = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="api-consume")

    async def run(self, wait: Callable[[], T]) -> T | JsonResponse:
        """``wait()`` on a waiter's thread, or the 429 refusal when ``limit`` are running already."""
        if not self._places.acquire(blocking=False):
            return self.refusal()
        # The place is given back by the thread once it is done, not by this coroutine, which a client that hangs
        # up cancels while the thread still waits; or here when the call is cancelled before a thread took it.
        future = self._threads.submit(self._holding, wait)
        future.add_done_callback(self._if_never_run)
        return await asyncio.wrap_future(future)

    def _holding(self, wait: Callable[[], T]) -> T:
        try:
            return wait()
        finally:
            self._places.release()

    def _if_never_run(self, future: Future[T]) -> None:
        if future.cancelled():
            self._places.release()

    def refusal(self) -> JsonResponse:
        response = error_response(
            429,
            "too_many_waiters",
            f"too many consumers are waiting: {SETTING} ({self.limit}) consumes with a timeout may wait at once in "
            f"this server process, and all are taken; consume again after {RETRY_AFTER} s, or with timeout 0, "
            "which does not wait",
        )
        response["Retry-After"] = str(RETRY_AFTER)
        return response
