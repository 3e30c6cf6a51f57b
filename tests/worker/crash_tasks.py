"""Handlers for the worker-process tests (``taskworker --import tests.worker.crash_tasks``): each run sleeps as
long as its payload says, then records the task id in a Redis set, so the test can tell which tasks ran to the
end at least once. ``test:arecord`` does the same as a coroutine, for the asyncio pool. Imported only by the worker
subprocesses, so it registers into their global registry."""

from __future__ import annotations

import asyncio
import json
import time

from taskq.queues.engine import Task, handler
from tests.worker.task_redis import conn

DONE_KEY = "test:done"


@handler("test:record", retry_delay=lambda n, e, t: 0.1)
def record(task: Task) -> None:
    time.sleep(float(json.loads(task.payload or b"{}").get("sleep", 0)))
    conn().sadd(DONE_KEY, task.id)


@handler("test:arecord", retry_delay=lambda n, e, t: 0.1)
async def arecord(task: Task) -> None:
    await asyncio.sleep(float(json.loads(task.payload or b"{}").get("sleep", 0)))
    conn().sadd(DONE_KEY, task.id)  # one short blocking call on the loop: enough for a test
