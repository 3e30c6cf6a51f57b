"""Eager mode of ``TaskqBackend`` (``TASKS_EAGER = True``, for tests): ``enqueue`` runs the ``@task`` function at
once, in the calling thread, and ``get_result`` reads what it did, as Django's ImmediateBackend reports a run.

The run is the engine's eager mode (``taskq.queues.engine.eager``) calling the worker's own runner
(``taskq.queues.tasks_runner``): the same validation, handler middleware, signals, journal and ``TaskResult`` as on a
worker. What differs is what differs on Django's ImmediateBackend:

- one attempt: a function that raises makes the result FAILED, with the exception's class path and traceback, at
  once (``MAX_RETRIES`` is not used); the exception is not raised to the caller (``TASKS_EAGER_PROPAGATES`` is for
  ``@handler`` tasks), the framework's ``task_finished`` logs it;
- ``run_after`` is not waited for and ``TIMEOUT`` is not enforced;
- nothing is read from or written to Redis: results are kept in this process's memory, the latest ``KEPT`` of them,
  readable from any of its threads.

Inside a database transaction the task runs when it commits, as a worker would only see it then.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from . import conf, handles
from . import tasks_framework as fw
from . import tasks_results as results
from .engine import Client

#: Results kept per process; the oldest goes first past it (``get_result`` then raises TaskResultDoesNotExist).
KEPT = 10_000

#: The fields of a ``TaskResult`` an eager run fills in.
OUTCOME = ("status", "started_at", "finished_at", "last_attempted_at", "errors", "worker_ids", "_return_value")


class EagerResults:
    """The latest results of eager runs by id, shared by the threads of a process: the framework builds a backend
    per thread, and a test may read a result from another thread than the one that enqueued it (a live server's)."""

    def __init__(self, limit: int = KEPT) -> None:
        self.limit = limit
        self._results: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, result: Any) -> None:
        kept = copy.deepcopy(result)  # what the caller does to its copy changes nothing here
        with self._lock:
            self._results[result.id] = kept
            while len(self._results) > self.limit:
                self._results.popitem(last=False)

    def get(self, result_id: str) -> Any:
        """A copy of the result ``result_id``, None when none is kept."""
        with self._lock:
            found = self._results.get(result_id)
        return None if found is None else copy.deepcopy(found)


#: This process's eager results (see ``EagerResults``).
kept = EagerResults()


def enabled() -> bool:
    return conf.taskq_settings().eager


def client() -> Client:
    """The eager client Django tasks run through: the one ``TASKS_EAGER`` configures, except that a function's
    exception is recorded in its result rather than raised (see the module's docstring)."""
    s = conf.taskq_settings()
    return handles.shared(
        ("django-tasks-eager", s.redis_url, s.key_prefix, s.max_payload_depth),
        lambda: Client.from_settings(replace(s, eager=True, eager_propagates=False)),
    )


def run(sender: type, result: Any, payload: dict[str, Any], options: dict[str, Any]) -> None:
    """Run the task of ``result`` (the READY ``TaskResult`` that ``enqueue`` returned, its ``enqueued_at`` set) now,
    fill ``result`` in with the outcome, and keep it for ``get_result``."""
    fw.signals.task_enqueued.send(sender, task_result=result)
    # One attempt, as ImmediateBackend: the first failure is the last, so the result reads FAILED.
    info = client().enqueue(result.task.module_path, payload, **{**options, "max_retry": 0})
    outcome = results.build(result.task, info, results.journal_of(info))
    for name in OUTCOME:
        object.__setattr__(result, name, getattr(outcome, name))
    kept.keep(result)


def get_result(alias: str, result_id: str) -> Any:
    """The result of the eager run ``result_id`` through the backend ``alias``; raises TaskResultDoesNotExist."""
    found = kept.get(result_id)
    if found is None or found.backend != alias:
        raise fw.TaskResultDoesNotExist(result_id)
    return found
