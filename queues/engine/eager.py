"""Eager mode: ``Client(eager=True)`` (in Django, ``TASKS_EAGER = True``) runs each task's handler inline, in the
calling thread, instead of writing the task to Redis. Meant for tests and scripts, like Celery's
``task_always_eager``.

One enqueue is one attempt: the handler registered for the type (longest prefix, as a worker routes) runs once
with a real ``Task`` (``task.inline`` is true), inside the registry's middleware. When it returns, ``enqueue``
returns a ``TaskInfo`` in state ``completed`` with whatever the handler wrote with ``write_result``, ``progress``
and ``write_journal``. When it raises, the exception propagates to the caller unless propagation is off; then the
``TaskInfo`` says where a worker would have put the task (``retry``, with ``next_process_at`` from the handler's
``retry_delay``, or ``archived``) and why (``last_error``). Nothing is retried, nothing is read from or written to
Redis, and nothing waits for ``process_at``/``process_in``.
"""

from __future__ import annotations

import asyncio
import inspect
from contextlib import ExitStack
from typing import Any

from .clock import Clock, from_ms, to_ms
from .errors import HandlerNotFoundError, RetryWithoutFailure, SkipRetry, ValidationError
from .handlers import Handler, Registry, Task
from .handlers import registry as default_registry
from .message import TaskInfo, TaskMessage
from .quoting import shown


class EagerAttempt:
    """Keeps what the handler writes through ``Task.write_result``, ``Task.progress`` and ``Task.write_journal`` in
    memory."""

    def __init__(self) -> None:
        self.fields: dict[str, bytes] = {}

    def write(self, field: str, value: bytes) -> None:
        self.fields[field] = value

    def progress(self) -> tuple[int, int] | None:
        raw = self.fields.get("progress")
        if raw is None:
            return None
        done, total = raw.split(b"/")
        return int(done), int(total)


class EagerRunner:
    """Runs one task message through its handler, as a worker's attempt would, and reports the outcome."""

    def __init__(self, clock: Clock, *, registry: Registry | None = None, propagate: bool = True) -> None:
        self.clock = clock
        self.registry = registry if registry is not None else default_registry
        self.propagate = propagate

    def run(self, message: TaskMessage, op: str) -> TaskInfo:
        """Run the task's handler now. Raises HandlerNotFoundError when no handler takes the type, and (with
        propagation) whatever the handler raised, except ``RetryWithoutFailure``, which is not a failure."""
        handler = self.registry.route(message.type)
        if handler is None:
            raise HandlerNotFoundError(
                f"no handler for task type {shown(message.type)}: eager mode runs handlers inline, so the module that "
                "registers it must be imported first",
                op=op,
            )
        attempt = EagerAttempt()
        task = Task(message, 0, attempt, inline=True)
        state, error, retry_in = "completed", None, 0.0
        began = self.clock.now()
        try:
            self._call(handler, task)
        except Exception as exc:
            if self.propagate and not isinstance(exc, RetryWithoutFailure):
                raise
            state, retry_in = _after_first_attempt(exc, handler, task)
            error = _describe(exc)
        seconds = self.clock.now()
        now = from_ms(to_ms(seconds))
        return TaskInfo(
            id=message.id,
            type=message.type,
            queue=message.queue,
            state=state,
            payload=message.payload,
            max_retry=message.max_retry,
            timeout=message.effective_timeout(),
            deadline=from_ms(message.deadline_ms),
            retention=message.retention,
            headers=message.headers,
            created_at=from_ms(message.created_ms),
            last_error=error,
            last_failed_at=now if error else None,
            completed_at=now if state == "completed" else None,
            last_run_seconds=seconds - began,
            result=attempt.fields.get("result"),
            journal=attempt.fields.get("journal"),
            progress=attempt.progress(),
            state_since=now,
            next_process_at=from_ms(to_ms(seconds + retry_in)) if state == "retry" else None,
        )

    def _call(self, handler: Handler, task: Task) -> None:
        with ExitStack() as stack:
            for middleware in self.registry.middleware:
                stack.enter_context(middleware(task))
            returned = handler(task)
            if inspect.isawaitable(returned):
                _await_here(returned, task)


def _after_first_attempt(exc: Exception, handler: Handler, task: Task) -> tuple[str, float]:
    """Where a worker would put the task after this failed first attempt, and in how many seconds it would run
    again from ``retry``."""
    if isinstance(exc, RetryWithoutFailure):
        return "retry", float(getattr(exc, "delay", 0) or 0) or handler.retry_delay(0, exc, task)
    if isinstance(exc, SkipRetry) or task.max_retry == 0:
        return "archived", 0.0
    return "retry", handler.retry_delay(0, exc, task)


def _await_here(awaitable: Any, task: Task) -> None:
    """Run an async handler to its end on a new event loop in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_wrap(awaitable))
        return
    awaitable.close()  # never awaited: close it so Python does not warn about it
    raise ValidationError(
        f"eager mode cannot run the async handler of {shown(task.type)} from inside a running event loop (it runs "
        "handlers in the calling thread); enqueue from synchronous code",
        op="client.enqueue",
    )


async def _wrap(awaitable: Any) -> None:
    await awaitable


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def unsupported(op: str, what: str) -> ValidationError:
    """The error for producer calls that need a worker and Redis, which eager mode has neither of."""
    return ValidationError(
        f"eager mode cannot {what}: that needs Redis and a worker; use a client without "
        "eager=True (TASKS_EAGER) and a worker (the taskq_worker fixture in tests)",
        op=op,
    )
