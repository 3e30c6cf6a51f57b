"""Handlers of the chaos suite's worker processes (``taskworker --import tests.chaos.chaos_tasks``). Imported only
by those processes, so they register into their global registry.

Runs that reach their end append the task id to the file named by CHAOS_DONE_FILE (one short line, written with
O_APPEND, so concurrent workers never interleave), kept outside Redis because Redis is what the tests kill."""

from __future__ import annotations

import json
import os
import signal
import time

from taskq.queues.engine import Task, handler

DONE_FILE_ENV = "CHAOS_DONE_FILE"  # chaos_support.DONE_FILE_ENV (not imported: tests/chaos is not a package)


def quick_retry(retried: int, error: BaseException, task: Task) -> float:
    return 0.1


@handler("chaos:record", retry_delay=quick_retry)
def record(task: Task) -> None:
    time.sleep(float(json.loads(task.payload or b"{}").get("sleep", 0)))
    fd = os.open(os.environ[DONE_FILE_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{task.id}\n".encode())
    finally:
        os.close(fd)


@handler("chaos:poison", retry_delay=quick_retry)
def poison(task: Task) -> None:
    """Kills the process running it, every time: a segfaulting C extension, an OOM kill."""
    os.kill(os.getpid(), signal.SIGKILL)
