"""The system checks of taskq's extras (``manage.py check``, and every command that runs checks): a feature the
project has configured whose extra is not installed, each message ending with the command that installs it
(``taskq.queues.engine.extras``). A feature the project does not use is never reported: a base install is quiet.

- taskq.E120: ``TASKS_EVENT_EXPORT`` is on without the ``spark`` extra (the exporter writes Parquet with pyarrow),
  so ``taskworker`` could not start its exporter;
- taskq.W121: Spark is asked for without the ``spark`` extra: ``SPARK_MASTER``, ``SPARK_REMOTE`` or ``SPARK_CONF``
  set, an analytics schedule other than the default, or a handler registered with ``spark=True`` (where the
  project's handlers are imported when the checks run). Those tasks would fail when a worker runs them;
- taskq.W122: ``RQ_QUEUES`` is set without the ``rq`` extra: the console's RQ pages are left out;
- taskq.E123: a ``TASKS`` backend is ``taskq.tasks_backend.TaskqBackend`` on a Django older than 6 without the
  ``django-tasks`` extra (Django 6 has ``django.tasks``; older ones need the backport);

PostgreSQL without its driver (the ``postgres`` extra) has no check: Django loads the database backend while it
sets up the apps, before any check runs, and stops there. The repository's settings name the extra at that point
(``taskq.console.env.env_database``).

Without the ``spark`` extra the analytics job is not scheduled at all (``taskq.queues.history.tasks``): a project that
leaves the schedules at their defaults is told nothing, one that set its own gets taskq.W121.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from . import conf
from .engine import extras
from .engine.handlers import Registry, registry
from .engine.settings import TaskqSettings

#: The backend whose TASKS entries need Django's Tasks framework.
TASKQ_BACKEND = "taskq.tasks_backend.TaskqBackend"
#: The handler taskq itself registers with ``spark=True``; only scheduled (see above) does it ask for Spark.
BUILTIN_SPARK_TYPES = frozenset({"analytics:daily"})


def _missing(extra: str, feature: str) -> str | None:
    return extras.missing_extra_message(extra, feature)


def spark_requests(taskq: TaskqSettings, handlers: Registry = registry) -> list[str]:
    """What in the settings and in ``handlers`` asks for Spark, each in a few words."""
    default = TaskqSettings()
    asked = [
        name
        for name, value, unset in (
            ("SPARK_MASTER", taskq.spark_master, default.spark_master),
            ("SPARK_REMOTE", taskq.spark_remote, default.spark_remote),
            ("SPARK_CONF", taskq.spark_conf, default.spark_conf),
            ("TASKS_ANALYTICS_SCHEDULE", taskq.analytics_schedule, default.analytics_schedule),
            ("TASKS_ANALYTICS_TODAY_SCHEDULE", taskq.analytics_today_schedule, default.analytics_today_schedule),
        )
        if value and value != unset
    ]
    spark_types = sorted(
        t for t in handlers.types() if t not in BUILTIN_SPARK_TYPES and getattr(handlers.route(t), "spark", False)
    )
    if spark_types:
        asked.append("Spark handlers " + ", ".join(spark_types))
    return asked


def spark_checks(taskq: TaskqSettings, handlers: Registry = registry) -> list[checks.CheckMessage]:
    """taskq.E120 and taskq.W121, for these settings and the Spark handlers in ``handlers``."""
    found: list[checks.CheckMessage] = []
    if taskq.event_export:
        message = _missing("spark", "TASKS_EVENT_EXPORT (the event exporter writes Parquet)")
        if message:
            found.append(checks.Error(message, id="taskq.E120"))
    asked = spark_requests(taskq, handlers)
    if asked:
        message = _missing("spark", f"Spark ({'; '.join(asked)})")
        if message:
            found.append(checks.Warning(message, hint="Those tasks fail when a worker runs them.", id="taskq.W121"))
    return found


def rq_checks(rq_queues: object) -> list[checks.CheckMessage]:
    """taskq.W122, for the project's ``RQ_QUEUES``."""
    if not rq_queues:
        return []
    message = _missing("rq", "The RQ bridge (RQ_QUEUES is set)")
    if message is None:
        return []
    return [checks.Warning(message, hint="The console leaves out its RQ pages until then.", id="taskq.W122")]


def tasks_checks(backends: object) -> list[checks.CheckMessage]:
    """taskq.E123, for the project's ``TASKS``."""
    if not isinstance(backends, dict) or extras.importable("django.tasks"):
        return []
    aliases = [
        alias for alias, entry in backends.items() if isinstance(entry, dict) and entry.get("BACKEND") == TASKQ_BACKEND
    ]
    message = _missing("django-tasks", f"TASKS {aliases} on Django older than 6") if aliases else None
    return [checks.Error(message, id="taskq.E123")] if message else []


@checks.register()
def check_extras(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # Not scoped to app_configs: the settings are the whole process's, as Django's own checks of settings are.
    return [
        *spark_checks(conf.taskq_settings()),
        *rq_checks(getattr(settings, "RQ_QUEUES", None)),
        *tasks_checks(getattr(settings, "TASKS", None)),
    ]
