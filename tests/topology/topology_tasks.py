"""Handlers of the topology tests (``taskworker --import tests.topology.topology_tasks``), imported only by the
worker subprocesses. Completions are appended to a local file (TOPOLOGY_DONE_FILE), not to Redis: the failover
test counts them, and a record kept on the Redis being failed over could itself be lost."""

from __future__ import annotations

import asyncio
import json
import os
import time

from taskq.queues.engine import SkipRetry, Task, handler


@handler("topo:record", retry_delay=lambda n, e, t: 0.1)
def record(task: Task) -> None:
    time.sleep(float(json.loads(task.payload or b"{}").get("sleep", 0)))
    # One short O_APPEND write per line: lines of concurrent handlers do not interleave.
    with open(os.environ["TOPOLOGY_DONE_FILE"], "a") as done:
        done.write(f"{task.queue} {task.id} {time.time():.3f}\n")


@handler("topo:fail")
def fail(task: Task) -> None:
    raise SkipRetry("failed on purpose")


@handler("topo:sleep")
async def sleep(task: Task) -> None:
    """Runs until cancelled (the cancel test) or a minute has passed."""
    await asyncio.sleep(60)
