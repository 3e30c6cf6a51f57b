"""``TaskqBackend``: Django's Tasks framework (``django.tasks``, or the ``django-tasks`` backport on Django 5.2) on
taskq. ``@task`` functions are enqueued as taskq tasks whose type is the function's module path and whose payload
is ``{"args": [...], "kwargs": {...}}``; a ``taskworker`` runs them with no ``@handler`` (``taskq.queues.tasks_runner``
resolves the type back to the function), with every taskq guarantee: leases, retries, timeouts, cancellation,
events, metrics and the console.

    TASKS = {"default": {"BACKEND": "taskq.tasks_backend.TaskqBackend", "QUEUES": ["default", "mail"],
                         "OPTIONS": {"MAX_RETRIES": 3, "TIMEOUT": 600, "RESULT_RETENTION": 86400}}}

With ``TASKS_EAGER = True`` (tests) nothing goes to Redis: ``enqueue`` runs the function at once and ``get_result``
reads its outcome from this process's memory (``taskq.queues.tasks_eager``).

Priority is not supported (``supports_priority = False``): a taskq queue is first in, first out, and ordering
between queues comes from the workers' weights, not from the task.
"""

from __future__ import annotations

import importlib
import sys
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import transaction
from django.utils import timezone

from taskq.queues import conf, tasks_eager
from taskq.queues import tasks_framework as fw
from taskq.queues import tasks_results as results
from taskq.queues.engine import (
    PayloadTooDeepError,
    QueueNotFoundError,
    TaskNotFoundError,
    ValidationError,
    nesting,
    producer_tracing,
)
from taskq.queues.engine import validation as check
from taskq.queues.engine.producer import new_task_id
from taskq.queues.engine.quoting import shown
from taskq.queues.tasks_checks import backend_checks

#: OPTIONS and their defaults. MAX_RETRIES is not taskq's 25: the framework has no retries, and a task that fails
#: should read FAILED within minutes, not weeks; it is not 0 either, so a worker that dies mid-task loses nothing
#: (its lease runs out and the task runs again, as every taskq task does).
DEFAULT_OPTIONS: dict[str, Any] = {
    "MAX_RETRIES": 3,
    "TIMEOUT": None,  # seconds an attempt may run; None: taskq's default (30 minutes)
    "RESULT_RETENTION": 86400.0,  # seconds a finished task's result stays readable
}


class TaskqBackend(fw.BaseTaskBackend):
    """A Tasks framework backend whose tasks run on taskq workers. Results are readable from any process for the
    ``RESULT_RETENTION`` option (a day by default); after that, as for an unknown id, ``get_result`` raises
    ``TaskResultDoesNotExist``."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = False

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.settings = {**DEFAULT_OPTIONS, **(self.options if isinstance(self.options, dict) else {})}

    # -- enqueue -------------------------------------------------------------------------------------------------

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Write ``task(*args, **kwargs)`` as a taskq task (when the transaction commits, inside one). Raises the
        framework's InvalidTask for a task this backend cannot run, TypeError or ValueError for arguments that
        are not JSON, and the engine's errors (ValidationError, RedisUnavailableError); nothing is written then."""
        self.validate_task(task)
        self._refuse_bad_options()
        # The framework normalizes the arguments recursively: arguments nested past the payload limit are refused
        # by name before that, not with a RecursionError (the payload holds them one level down).
        depth = conf.taskq_settings().max_payload_depth
        if nesting.value_deeper_than([args, kwargs], depth):
            raise PayloadTooDeepError(
                f"the arguments are nested deeper than {depth - 1} levels (TASKS_MAX_PAYLOAD_DEPTH)",
                op="tasks_backend.enqueue",
            )
        task_id = new_task_id()
        result = fw.TaskResult(
            task=task,
            id=task_id,
            status=fw.TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,  # normalized here, as the framework does: what JSON cannot hold raises now
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        payload = {"args": result.args, "kwargs": result.kwargs}
        options = self._enqueue_options(task, task_id)
        client = conf.get_client()
        client.validate(task.module_path, payload, op="tasks_backend.enqueue", **options)

        def write() -> None:
            # Kept whole in a header: the task message's own time has milliseconds, Django's results microseconds.
            enqueued_at = timezone.now()
            options["headers"][results.ENQUEUED_AT_HEADER] = results.stamp(enqueued_at)
            object.__setattr__(result, "enqueued_at", enqueued_at)
            if tasks_eager.enabled():
                tasks_eager.run(type(self), result, payload, options)
                return
            client.enqueue(task.module_path, payload, **options)
            fw.signals.task_enqueued.send(type(self), task_result=result)

        # A task that reads rows written in the open transaction must not run before they are committed. Only
        # the atomic flag is read: outside a transaction this touches no database connection.
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(producer_tracing.bound(write))
        else:
            write()
        return result

    def _enqueue_options(self, task: Any, task_id: str) -> dict[str, Any]:
        headers = {results.BACKEND_HEADER: self.alias}
        options: dict[str, Any] = {
            "queue": task.queue_name,
            "task_id": task_id,
            "max_retry": self.settings["MAX_RETRIES"],
            "retention": float(self.settings["RESULT_RETENTION"]),
            "headers": headers,
        }
        if self.settings["TIMEOUT"] is not None:
            options["timeout"] = float(self.settings["TIMEOUT"])
        if task.run_after is not None:
            options["process_at"] = task.run_after
            headers[results.RUN_AFTER_HEADER] = task.run_after.isoformat()
        return options

    def _refuse_bad_options(self) -> None:
        errors = [m for m in backend_checks(self, with_redis=False) if m.is_serious()]
        if errors:
            raise fw.InvalidTask(f"TASKS[{shown(self.alias)}] is misconfigured: {errors[0].msg}")

    # -- results -------------------------------------------------------------------------------------------------

    def get_result(self, result_id: str) -> Any:
        """The TaskResult of the task ``result_id`` enqueued through this backend, from any process. Raises
        TaskResultDoesNotExist for an id it never gave, and for one whose result is past its retention. In eager
        mode, the result of a run in this process (see ``taskq.queues.tasks_eager``)."""
        if tasks_eager.enabled():
            return tasks_eager.get_result(self.alias, result_id)
        info = self.find(result_id)
        task = find_task(info.type)
        if task is None:
            raise fw.TaskResultDoesNotExist(
                f"{result_id}: its function {shown(info.type)} is no longer a task of this backend"
            )
        return results.build(as_enqueued(task, info), info, results.reconciled(info, results.journal_of(info)))

    def find(self, result_id: str) -> Any:
        """The taskq task behind ``result_id``, looked up in this backend's QUEUES (a result id names no queue)."""
        try:
            check.task_id(result_id, "tasks_backend.get_result")
        except ValidationError as exc:
            raise fw.TaskResultDoesNotExist(result_id) from exc
        inspector = conf.get_inspector("tasks_backend")
        for queue in sorted(self.queues):
            try:
                info = inspector.get_task(queue, result_id)
            except (QueueNotFoundError, TaskNotFoundError, ValidationError):
                continue
            # A taskq task that the framework did not enqueue (or another alias did) is no result of ours.
            if info.headers.get(results.BACKEND_HEADER) == self.alias:
                return info
        raise fw.TaskResultDoesNotExist(result_id)

    # -- checks --------------------------------------------------------------------------------------------------

    def check(self, **kwargs: Any) -> list[Any]:
        return [*super().check(**kwargs), *backend_checks(self, with_redis=True)]


def as_enqueued(task: Any, info: Any) -> Any:
    """``task`` with the backend, queue and ``run_after`` it was enqueued with (``Task.using``)."""
    run_after = info.headers.get(results.RUN_AFTER_HEADER)
    changes: dict[str, Any] = {"queue_name": info.queue, "backend": info.headers[results.BACKEND_HEADER]}
    if run_after:
        changes["run_after"] = datetime.fromisoformat(run_after)
    return task.using(**changes)


def trusted_module(name: str) -> bool:
    """Whether a task type may make this process import ``name``: a module imported already (the worker imports
    every app's ``tasks`` and its ``--import`` modules), or one inside an installed app. Anyone who can enqueue
    chooses a task's type, and importing a module runs its code."""
    if name in sys.modules:
        return True
    return any(name == app.name or name.startswith(app.name + ".") for app in apps.get_app_configs())


def find_task(module_path: str) -> Any:
    """The framework's Task whose ``module_path`` this is, else None: only a module-level object made by
    ``@task`` qualifies, never a plain function of the same path."""
    module_name, _, name = module_path.rpartition(".")
    if not module_name or not trusted_module(module_name):
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    found = getattr(module, name, None)
    if not isinstance(found, fw.Task) or found.module_path != module_path:
        return None
    return found


def taskq_backend(alias: str) -> TaskqBackend | None:
    """The backend TASKS names ``alias``, when it is a TaskqBackend (the alias a task was enqueued through)."""
    try:
        backend = fw.task_backends()[alias]
    except Exception:  # an alias TASKS no longer has (InvalidTaskBackend, an ImproperlyConfigured)
        return None
    return backend if isinstance(backend, TaskqBackend) else None
