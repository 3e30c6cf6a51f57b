"""Django's Tasks framework, wherever this Django has it: ``django.tasks`` (Django 6.0 and later) or the
``django-tasks`` backport (``django_tasks``, Django 4.2 to 5.2). The two lay their modules out alike (``base``,
``exceptions``, ``signals``, ``backends.base``); where they name a thing differently, Django's own name is the one
used here. On a Django that has both, Django's wins: its ``@task`` is the one a project on that Django writes."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

from .engine import extras

#: The feature named to a Django older than 6 without the backport (MissingExtraError).
FEATURE = "Django's Tasks framework on Django older than 6 (taskq.tasks_backend.TaskqBackend)"


def _package() -> str:
    if extras.importable("django.tasks"):  # Django 6.0 and later
        return "django.tasks"
    extras.require("django-tasks", FEATURE, op="taskq.queues.tasks_framework")
    return "django_tasks"


PACKAGE = _package()


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}" if name else PACKAGE)


_base = _module("base")
_exceptions = _module("exceptions")
# Imported for what importing them does: the signals module resets the backends when TASKS changes
# (override_settings), and the checks module registers the framework's check of every backend, also when a
# project on the backport leaves "django_tasks" out of INSTALLED_APPS.
signals = _module("signals")
_module("checks")

BaseTaskBackend: Any = _module("backends.base").BaseTaskBackend
Task: Any = _base.Task
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
TaskError: Any = _base.TaskError
TaskContext: Any = _base.TaskContext
TaskResultDoesNotExist: type[Exception] = _exceptions.TaskResultDoesNotExist
# Django 6 says InvalidTask; the backport, InvalidTaskError.
InvalidTask: type[Exception] = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
# Django 6 has it in django.utils.json; the backport, in its utils.
if PACKAGE == "django.tasks":
    from django.utils.json import normalize_json as _normalize_json
else:
    from django_tasks.utils import normalize_json as _normalize_json


def task_backends() -> Any:
    """The framework's backend handler (``task_backends[alias]``)."""
    return _module("").task_backends


def normalize_json(value: Any) -> Any:
    """The framework's own JSON normalization (tuples to lists, bytes to text), which raises TypeError or
    ValueError for what JSON cannot hold: the test every argument and return value must pass."""
    return _normalize_json(value)
