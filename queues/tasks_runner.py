"""How a worker runs a Django task (one enqueued through ``taskq.tasks_backend.TaskqBackend``): ``resolve`` is a
resolver of the engine's handler registry (``Registry.resolve_with``, installed by ``taskq.queues.apps``) that turns a
task type no ``@handler`` routes into a handler, when the type is the module path of a ``@task`` function.

Each attempt, in the worker:

1. reads the task back (its journal of earlier attempts), adds an entry for this attempt (this worker, now) and
   writes it, fenced by the lease: from then on ``get_result`` in any process reads RUNNING, the start time and
   the worker ids (in eager mode, where the attempt runs inline and the task is in no Redis, the message is all
   there is to read: the backend keeps the outcome, see ``taskq.queues.tasks_eager``);
2. sends the framework's ``task_started``, and calls the function (``context`` first for ``takes_context``, with
   the result id and the attempt number);
3. on success writes the return value (which must be JSON: one that is not fails the task at once, as a
   re-run would only repeat the side effects) and the end time, and sends ``task_finished``; on an exception
   records its class path, traceback and end time in the journal and raises it to the worker, which retries or
   archives the task as any other, sending ``task_finished`` when the attempt was the last (the task is FAILED).

The handler stands for the ``@task`` function (``__wrapped__``), so a failure's error group names that function,
not this module (see ``taskq.queues.engine.failures.handler_frame``).

A handler that reads the task back needs the worker's own Redis connection, so Django tasks stay in the worker
process under ``--pool process`` too (``Handler.in_worker``).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.utils import timezone

from taskq.queues.engine.clock import from_ms
from taskq.queues.engine.message import TaskInfo
from taskq.queues.engine.quoting import shown

from . import conf
from . import tasks_framework as fw
from . import tasks_results as results
from .engine import Handler, SkipRetry, Task
from .engine.failures import bounded
from .tasks_backend import TaskqBackend, as_enqueued, find_task, taskq_backend


class ReturnValueNotJSON(SkipRetry):
    """A Django task returned what JSON cannot hold: the task fails at once (a retry would rerun its effects)."""


class NotATaskqTask(SkipRetry):
    """The task names no TASKS alias of a TaskqBackend (it was not enqueued through one, or TASKS changed)."""


def resolve(task_type: str) -> Handler | None:
    """The handler of the Django task whose module path is ``task_type``, or None when it names no ``@task``."""
    task = find_task(task_type)
    if task is None:
        return None
    run = _run_async if inspect.iscoroutinefunction(task.func) else _run_sync
    return Handler(task_type, run(task), in_worker=True)


class Run:
    """One attempt of a Django task: what steps 1 and 3 of the module's docstring read and write."""

    def __init__(self, task: Any, attempt: Task) -> None:
        self.attempt = attempt
        alias = attempt.headers.get(results.BACKEND_HEADER, "")
        backend = taskq_backend(alias)
        if backend is None:
            raise NotATaskqTask(f"task {attempt.id}: TASKS has no taskq backend {shown(alias)} (its header)")
        self.backend: TaskqBackend = backend
        info = read_back(attempt)
        self.journal = results.reconciled(info, results.journal_of(info))
        worker = attempt.worker_id or INLINE_WORKER
        self.journal.append({"worker": worker, "started": results.stamp(timezone.now())})
        attempt.write_journal(self.journal)
        self.result = results.build(as_enqueued(task, info), info, self.journal, status=fw.TaskResultStatus.RUNNING)
        self.task = self.result.task
        self.args = list(self.result.args)
        if self.task.takes_context:
            self.args.insert(0, fw.TaskContext(task_result=self.result))
        self.kwargs = dict(self.result.kwargs)
        fw.signals.task_started.send(type(self.backend), task_result=self.result)

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Around the call: an exception is recorded (``failed``) and raised on to the worker."""
        try:
            yield
        except Exception as exc:
            self.failed(exc)
            raise

    def succeeded(self, value: Any) -> None:
        try:
            normalized = fw.normalize_json(value)
            self.attempt.write_result(normalized)  # json.dumps: refuses what normalize lets through (a NaN key)
        except (TypeError, ValueError) as exc:
            raise ReturnValueNotJSON(
                f"{self.task.module_path} returned {type(value).__name__}, which is not JSON: {exc}"
            ) from exc
        self._set(self._finish(), status=fw.TaskResultStatus.SUCCESSFUL, _return_value=normalized)
        fw.signals.task_finished.send(type(self.backend), task_result=self.result)

    def failed(self, exc: BaseException) -> None:
        """Record ``exc`` in the journal; on the task's last attempt, tell ``task_finished`` it FAILED. Called
        inside the ``except`` block, as the framework sends the signal (its receivers log ``exc_info``)."""
        kind = type(exc)
        error = {"class": f"{kind.__module__}.{kind.__qualname__}", "traceback": bounded(traceback.format_exc())}
        self.journal[-1]["error"] = error
        finished = self._finish()
        if isinstance(exc, SkipRetry) or self.attempt.retried >= self.attempt.max_retry:
            self.result.errors.append(fw.TaskError(exception_class_path=error["class"], traceback=error["traceback"]))
            self._set(finished, status=fw.TaskResultStatus.FAILED)
            fw.signals.task_finished.send(type(self.backend), task_result=self.result)

    def _finish(self) -> Any:
        """Record the attempt's end in the journal (written, fenced by the lease) and return it."""
        finished = timezone.now()
        self.journal[-1]["finished"] = results.stamp(finished)
        self.attempt.write_journal(self.journal)
        return finished

    def _set(self, finished: Any, **fields: Any) -> None:
        for name, value in {"finished_at": finished, **fields}.items():
            object.__setattr__(self.result, name, value)


#: The worker id of an attempt run inline (eager mode), in ``TaskResult.worker_ids``.
INLINE_WORKER = "eager"


def read_back(attempt: Task) -> TaskInfo:
    """The task as stored, read through the worker's connection; for an attempt run inline, what its message
    says (there is no earlier attempt: eager mode runs a task once)."""
    if not attempt.inline:
        return conf.get_inspector("worker").get_task(attempt.queue, attempt.id)
    message = attempt.message
    return TaskInfo(
        id=message.id,
        type=message.type,
        queue=message.queue,
        state="active",
        payload=message.payload,
        max_retry=message.max_retry,
        headers=message.headers,
        created_at=from_ms(message.created_ms),
    )


def _run_sync(task: Any) -> Callable[[Task], None]:
    def run(attempt: Task) -> None:
        current = Run(task, attempt)
        with current.recording():
            current.succeeded(task.func(*current.args, **current.kwargs))

    run.__wrapped__ = task.func  # type: ignore[attr-defined]
    return run


def _run_async(task: Any) -> Callable[[Task], Any]:
    async def run(attempt: Task) -> None:
        current = Run(task, attempt)
        with current.recording():
            current.succeeded(await task.func(*current.args, **current.kwargs))

    run.__wrapped__ = task.func  # type: ignore[attr-defined]
    return run
