"""The ``@task`` functions the backend tests enqueue; a worker started with ``--import tests.djtasks.tasks`` runs
them with no ``@handler``.

Each is declared on the default backend and queue: the framework validates a task against the TASKS of the moment
it is declared, and in the main suite that is the console's (no TASKS), not the tests'. The tests pick other
backends and queues with ``Task.using``."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from typing import Any

try:  # Django 6
    from django.tasks import task
    from django.tasks.signals import task_enqueued, task_finished, task_started
except ImportError:  # Django 5.2 and the django-tasks backport
    from django_tasks import task
    from django_tasks.signals import task_enqueued, task_finished, task_started

#: Where the signal receivers below append one JSON line per signal (set by the tests for their worker).
SIGNAL_LOG = "DJTASKS_SIGNAL_LOG"


def _record(name: str):
    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        path = os.environ.get(SIGNAL_LOG)
        if path:
            line = {"signal": name, "id": task_result.id, "status": str(task_result.status), "pid": os.getpid()}
            for moment in ("enqueued_at", "started_at", "finished_at"):
                when = getattr(task_result, moment)
                line[moment] = when.isoformat() if when else None
            with open(path, "a") as log:
                log.write(json.dumps(line) + "\n")

    return receiver


# Kept in module globals: signals hold weak references to receivers.
RECEIVERS = {
    signal: _record(name)
    for name, signal in [("enqueued", task_enqueued), ("started", task_started), ("finished", task_finished)]
}
for _signal, _receiver in RECEIVERS.items():
    _signal.connect(_receiver)


class Refused(Exception):
    """What ``fail`` raises: a class of this module, so its path names it."""


@task
def add(a: int, b: int) -> int:
    return a + b


@task
def greet(name: str, *, punctuation: str = "!") -> dict[str, Any]:
    return {"greeting": f"hello {name}{punctuation}"}


@task
def fail(reason: str) -> None:
    raise Refused(reason)


@task(takes_context=True)
def flaky(context: Any, succeed_on: int) -> dict[str, Any]:
    """Fails until its ``succeed_on``-th attempt, then returns what its context said."""
    if context.attempt < succeed_on:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return {"attempt": context.attempt, "result_id": context.task_result.id}


@task
def not_json() -> Any:
    return datetime.date(2026, 1, 1)


@task(takes_context=True)
async def async_add(context: Any, a: int, b: int) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"sum": a + b, "attempt": context.attempt, "result_id": context.task_result.id}


@task
def brief() -> str:
    return "gone soon"
