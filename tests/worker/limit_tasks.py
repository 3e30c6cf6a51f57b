"""Handlers for the worker-process tests of queue limits (``taskworker --import tests.worker.limit_tasks``).
``test:limited`` counts the handlers running at once across every worker process in Redis (``RUNNING``), keeps
the highest count seen (``PEAK``), and adds its task id to ``DONE`` when it ends. Imported only by the worker
subprocesses, so it registers into their global registry."""

from __future__ import annotations

import json
import time

from taskq.queues.engine import Task, handler
from tests.worker.task_redis import conn

RUNNING, PEAK, DONE = "test:running", "test:peak", "test:done"

# One step, so two processes starting at once cannot both miss each other.
_ENTER = """
local n = redis.call("INCR", KEYS[1])
if n > tonumber(redis.call("GET", KEYS[2]) or "0") then redis.call("SET", KEYS[2], n) end
return n
"""


@handler("test:limited")
def limited(task: Task) -> None:
    conn().eval(_ENTER, 2, RUNNING, PEAK)
    try:
        time.sleep(float(json.loads(task.payload or b"{}").get("sleep", 0)))
    finally:
        conn().decr(RUNNING)
    conn().sadd(DONE, task.id)
