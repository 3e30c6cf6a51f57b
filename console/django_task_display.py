"""How the task page shows a Django task (one enqueued through ``taskq.tasks_backend.TaskqBackend``): its function's
module path, the call with its arguments written as Python would, and the framework's status with each failed
attempt's exception class. Read from the (already redacted) task alone: the page imports no task function."""

from __future__ import annotations

import json
from typing import Any

from taskq.queues.engine.message import TaskInfo
from taskq.queues.engine.nesting import loads
from taskq.queues.tasks_results import BACKEND_HEADER, RUN_AFTER_HEADER, STATUS, journal_of, reconciled


def django_task(task: TaskInfo) -> dict[str, Any] | None:
    """What the page shows of a Django task; None for any other task."""
    alias = task.headers.get(BACKEND_HEADER)
    if alias is None:
        return None
    journal = reconciled(task, journal_of(task))
    return {
        "module_path": task.type,
        "call": _call(task),
        "backend": alias,
        "run_after": task.headers.get(RUN_AFTER_HEADER),
        "status": STATUS.get(task.state, "READY"),
        "errors": [e["error"]["class"] for e in journal if isinstance(e.get("error"), dict)],
        "workers": [str(e.get("worker", "")) for e in journal],
    }


def _call(task: TaskInfo) -> str | None:
    """``name(1, 'a', key=[2])``, or None when the payload is not the backend's ``{"args", "kwargs"}`` (masked)."""
    try:
        payload = loads(task.payload)
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("args"), list):
        return None
    kwargs = payload.get("kwargs")
    if not isinstance(kwargs, dict):
        kwargs = {}
    parts = [json.dumps(a) for a in payload["args"]] + [f"{k}={json.dumps(v)}" for k, v in kwargs.items()]
    return f"{task.type.rpartition('.')[2]}({', '.join(parts)})"
