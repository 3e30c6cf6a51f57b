"""A Django task's ``TaskResult``, read from its taskq task: the task hash gives the state, the times and the return
value (its ``result``); the journal (``TaskInfo.journal``, written by ``taskq.queues.tasks_runner``) gives one entry per
attempt: the worker that ran it, when it started, and the error it raised.

Journal entries: ``{"worker": server id, "started": moment, "finished": moment, "error": {"class": exception class
path, "traceback": text}}``, ``finished`` only on an attempt whose function returned or raised, the error only on one
that raised. Moments are ISO 8601 with microseconds, as Django's own backends keep them (the task hash keeps
milliseconds); a number is epoch milliseconds, from journals written before. An attempt can also end without its handler
raising: a timeout, a cancel, a lost lease, a worker that died. The retry or archive transition then writes only
the task's last error; ``reconciled`` gives such an attempt that error, so no failed attempt is left without one.
"""

from __future__ import annotations

import builtins
import json
from datetime import UTC, datetime
from typing import Any

from .engine import errors as engine_errors
from .engine.message import TaskInfo
from .engine.nesting import loads as loads_bounded

READY_STATES = frozenset({"pending", "scheduled", "retry", "aggregating", "waiting"})
STATUS = {"active": "RUNNING", "completed": "SUCCESSFUL", "archived": "FAILED"}

#: Header of every task the backend enqueues: the TASKS alias that enqueued it (a task without it is not one).
BACKEND_HEADER = "django-tasks-backend"
#: Header holding the task's ``run_after`` (ISO 8601), so its TaskResult shows the Task as it was enqueued.
RUN_AFTER_HEADER = "django-tasks-run-after"
#: Header holding when the task was written (ISO 8601, microseconds): the message's own time has milliseconds.
ENQUEUED_AT_HEADER = "django-tasks-enqueued-at"


def journal_of(info: TaskInfo) -> list[dict[str, Any]]:
    """The task's journal, [] when it has none or it cannot be read (written by something else)."""
    if not info.journal:
        return []
    try:
        entries = loads_bounded(info.journal)
    except ValueError:
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def class_path(kind: str) -> str:
    """The importable path of an exception class the worker named only by its name (``TaskCancelledError``,
    ``TimeoutError``): the engine's errors and the builtins are the classes the worker itself decides with."""
    if isinstance(getattr(engine_errors, kind, None), type):
        return f"{engine_errors.__name__}.{kind}"
    if isinstance(getattr(builtins, kind, None), type):
        return f"builtins.{kind}"
    return "builtins.Exception"


def reconciled(info: TaskInfo, journal: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``journal`` with its last attempt given the task's last error when that attempt ended without raising one
    (see the module's docstring), once the task has left it (it is not running, nor succeeded)."""
    if not journal or info.state in ("active", "completed") or "error" in journal[-1] or not info.last_error:
        return journal
    kind = info.last_error.partition(":")[0].strip()
    error = {"class": class_path(kind), "traceback": info.last_traceback or info.last_error}
    return [*journal[:-1], {**journal[-1], "error": error}]


def stamp(moment: datetime) -> str:
    """How the journal and the headers write a moment (read back by ``moment_of``)."""
    return moment.isoformat()


def moment_of(value: Any) -> datetime | None:
    """A moment ``stamp`` wrote; a number is epoch milliseconds; None for anything else."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, UTC)
    return None


def status_of(info: TaskInfo) -> Any:
    # optional: Django's Tasks framework (the console's task page reads the headers and journal without it)
    from . import tasks_framework as fw

    return fw.TaskResultStatus(STATUS.get(info.state, "READY"))


def build(task: Any, info: TaskInfo, journal: list[dict[str, Any]], status: Any = None) -> Any:
    """The framework's TaskResult for the Django task ``task`` (as enqueued) from its taskq task ``info``."""
    from . import tasks_framework as fw  # optional: Django's Tasks framework

    status = status if status is not None else status_of(info)
    payload = json.loads(info.payload) if info.payload else {}
    last = journal[-1] if journal else {}
    finished = None
    if info.state in ("completed", "archived"):
        # The transition's own time (milliseconds) only for an attempt the worker ended from outside.
        finished = moment_of(last.get("finished")) or (
            info.completed_at if info.state == "completed" else info.state_since
        )
    result = fw.TaskResult(
        task=task,
        id=info.id,
        status=status,
        enqueued_at=moment_of(info.headers.get(ENQUEUED_AT_HEADER)) or info.created_at,
        started_at=moment_of(journal[0].get("started")) if journal else None,
        finished_at=finished,
        last_attempted_at=moment_of(last.get("started")),
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=info.headers.get(BACKEND_HEADER, ""),
        errors=[
            fw.TaskError(exception_class_path=str(e["error"]["class"]), traceback=str(e["error"]["traceback"]))
            for e in journal
            if isinstance(e.get("error"), dict)
        ],
        worker_ids=[str(e.get("worker", "")) for e in journal],
    )
    if status == fw.TaskResultStatus.SUCCESSFUL and info.result is not None:
        object.__setattr__(result, "_return_value", loads_bounded(info.result))
    return result
