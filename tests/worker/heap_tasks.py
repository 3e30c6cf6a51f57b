"""A handler for test_heap.py (``taskworker --import tests.worker.heap_tasks``): it reports how the worker process
it runs in has set the garbage collector, as its task's result. Imported only by the worker subprocess."""

from __future__ import annotations

import gc
import json

from taskq.queues.engine import Task, handler


@handler("test:gc")
def report_gc(task: Task) -> None:
    task.write_result(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold()}).encode())
