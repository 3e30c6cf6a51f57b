"""One call of a task's handler, and the outcome it ends with: what every pool that runs handlers in this process
shares (the thread pool's threads and event loop, the asyncio pool's loop and its threads for sync handlers).

A handler that raises gets its failure classified by the attempt (retry or archive, with its delay); one cancelled
because something else ended the attempt (timeout, cancel, lost lease, shutdown) ends as "drop", since whoever
ended it has already handed its outcome over.

While a handler runs, its attempt's span (worker/attempt_tracing.py) is current in its thread or asyncio task, so
what the handler traces and logs, and the failure logged here, belong to the attempt."""

from __future__ import annotations

import asyncio
import logging
from contextlib import ExitStack

from taskq.queues.engine import Clock, Registry, Task

from .attempt import Attempt, Outcome
from .spark import SparkRunner

log = logging.getLogger("taskq.worker.processor")


class HandlerCalls:
    """Runs handlers inside the registry's middleware (and the Spark session for Spark handlers)."""

    def __init__(self, registry: Registry, spark: SparkRunner, clock: Clock) -> None:
        self.registry, self.spark, self.clock = registry, spark, clock

    def _middleware(self, stack: ExitStack, task: Task) -> None:
        for middleware in self.registry.middleware:
            stack.enter_context(middleware(task))

    def _failed(self, attempt: Attempt, exc: Exception) -> Outcome:
        outcome = attempt.failure(exc, self.clock.now())
        log.info("task %s (%s) failed: %s", attempt.id, attempt.task.type, outcome.error)
        return outcome

    def sync(self, attempt: Attempt) -> Outcome:
        """Call a sync handler on this thread, its attempt's span current."""
        span = attempt.span
        if span is None:
            return self._sync(attempt)
        token = span.attach()
        try:
            return self._sync(attempt)
        finally:
            span.detach(token)

    def _sync(self, attempt: Attempt) -> Outcome:
        handler = attempt.handler
        assert handler is not None
        try:
            if not handler.spark and not self.registry.middleware:
                handler(attempt.task)  # nothing to wrap it in: no ExitStack per task
            else:
                with ExitStack() as stack:
                    if handler.spark:
                        stack.enter_context(self.spark.attach(attempt.task))
                    self._middleware(stack, attempt.task)
                    handler(attempt.task)
        except Exception as exc:
            return self._failed(attempt, exc)
        return Outcome("success")

    async def awaited(self, attempt: Attempt) -> Outcome:
        """Await an async handler on the running loop, its attempt's span current in its asyncio task."""
        span = attempt.span
        if span is None:
            return await self._awaited(attempt)
        token = span.attach()
        try:
            return await self._awaited(attempt)
        finally:
            span.detach(token)

    async def _awaited(self, attempt: Attempt) -> Outcome:
        if attempt.claimed:  # interrupted before the loop got to it: do not start it at all
            return Outcome("drop")
        handler = attempt.handler
        assert handler is not None
        try:
            if not self.registry.middleware:
                await handler(attempt.task)  # nothing to wrap it in: no ExitStack per task
            else:
                with ExitStack() as stack:
                    self._middleware(stack, attempt.task)
                    await handler(attempt.task)
        except asyncio.CancelledError:
            return Outcome("drop")  # whoever cancelled it has already ended the attempt
        except Exception as exc:
            return self._failed(attempt, exc)
        return Outcome("success")
