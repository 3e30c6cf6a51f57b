"""A handler module that imports in the worker but not in a handler process (it depends on state only the
worker's own process has), for the test that a child which cannot start fails the worker's start loudly."""

from __future__ import annotations

import multiprocessing

from taskq.queues.engine import Registry, Task, handler

if multiprocessing.parent_process() is not None:
    raise ImportError("this module only imports in the worker process")

registry = Registry()


@handler("broken:never", registry=registry)
def never_runs(task: Task) -> None:  # pragma: no cover - its module cannot be imported where it would run
    pass
