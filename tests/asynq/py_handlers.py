"""Handlers of the Python worker in the asynq interoperability tests (``taskworker --import
tests.asynq.py_handlers``), the counterparts of goasynq's: each start is recorded as
``py|<task id>|<retry count>|<INTEROP_NAME>`` on the list ``interop:runs``, as Go's handler records
``go|...``, so a test sees which side ran which attempt.

- ``fail``: raises (asynq's default backoff); ``fail:fast``: raises, retried after the handler's own 1 s delay;
  ``fail:later``: raises, retried after the handler's own hour;
- ``skip``: raises SkipRetry; ``nofail``: raises RetryWithoutFailure;
- ``result``: writes its payload as the result;
- ``sleep``: sleeps its payload's milliseconds, or until cancelled;
- ``nap``: sleeps its payload's milliseconds, retried after half a second (the mixed drain's tasks);
- ``work``: any other work (succeeds at once); ``async:result``: an async handler that writes its payload
  reversed as the result.

Imported only by the worker subprocesses, so it registers into their global registry.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from taskq.queues.engine import RetryWithoutFailure, SkipRetry, Task, handler
from tests.worker.task_redis import conn

RUNS = "interop:runs"


def record(task: Task) -> None:
    conn().rpush(RUNS, f"py|{task.id}|{task.retried}|{os.environ.get('INTEROP_NAME', 'py')}")


def raising(error: Exception) -> Callable[[Task], None]:
    def run(task: Task) -> None:
        record(task)
        raise error

    return run


handler("fail")(raising(RuntimeError("python handler failed")))
handler("fail:fast", retry_delay=lambda n, e, t: 1.0)(raising(RuntimeError("python handler failed")))
handler("fail:later", retry_delay=lambda n, e, t: 3600.0)(raising(RuntimeError("python handler failed")))
handler("skip")(raising(SkipRetry("python handler gave up")))
handler("nofail", retry_delay=lambda n, e, t: 3600.0)(raising(RetryWithoutFailure("not yet")))


@handler("result")
def result(task: Task) -> None:
    record(task)
    task.write_result(task.payload)


@handler("sleep")
def sleep(task: Task) -> None:
    record(task)
    ends = time.monotonic() + int(task.payload or b"0") / 1000
    while time.monotonic() < ends and not task.cancelled:
        time.sleep(0.01)


@handler("nap", retry_delay=lambda n, e, t: 0.5)
def nap(task: Task) -> None:
    record(task)
    time.sleep(int(task.payload or b"0") / 1000)


@handler("work")
def work(task: Task) -> None:
    record(task)


@handler("async:result")
async def async_result(task: Task) -> None:
    record(task)
    await asyncio.sleep(0)
    task.write_result(task.payload[::-1])
