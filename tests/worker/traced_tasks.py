"""Handlers of the tracing tests that run in worker processes the tests start (``--import tests.worker.traced_tasks``),
registered in the global registry as an application's are. Importing this module with ``TASKQ_TEST_SPANS`` set
sets up the process's SDK (tests/worker/span_file.py), as an application's handler module may: the worker process
and, through the forkserver that imports it too, every handler process of ``--pool process``.

``traced:work`` makes a span of its own and logs a line, so a test sees both join the attempt's span; it reports its
process id in the span, so a test can tell the handler process from the worker. With the payload ``meet`` it first
waits until a second attempt has begun (a count in Redis), so that with one slot per worker process the first two
tasks run in two processes; with ``fail`` it fails after its span."""

from __future__ import annotations

import logging
import os
import time

from taskq.queues.engine import Task, handler, tracing
from tests.worker.task_redis import conn

if folder := os.environ.get("TASKQ_TEST_SPANS"):
    from tests.worker.span_file import export_to  # optional: the SDK, only under a test

    export_to(folder)

log = logging.getLogger("traced_tasks")
MET_KEY = "test:traced:met"


@handler("traced:work")
def work(task: Task) -> None:
    if task.payload == b"meet":
        conn().incr(MET_KEY)
        deadline = time.monotonic() + 30
        while int(conn().get(MET_KEY) or 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    with tracing.tracer().start_as_current_span("handler work", attributes={"pid": os.getpid()}):
        log.info("working on %s", task.id)
    if task.payload == b"fail":
        raise ValueError("asked to fail")
