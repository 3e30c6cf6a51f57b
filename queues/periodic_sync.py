"""Mirroring the periodic tasks defined in the admin into Redis, where running schedulers read them."""

from __future__ import annotations

import logging

from . import conf
from .engine import EngineError
from .engine.asynq.scheduler_reads import AsynqSchedulerStore
from .engine.periodic import Entry
from .engine.scheduler_store import SchedulerStore
from .models import PeriodicTask

log = logging.getLogger("taskq.queues.periodic_sync")


def current_entries() -> list[Entry]:
    """The enabled periodic tasks of the database as engine entries. A row that no longer validates (edited
    outside the admin) is left out with an error in the log rather than stopping the others."""
    entries = []
    for row in PeriodicTask.objects.filter(enabled=True):
        try:
            entries.append(row.entry())
        except EngineError as exc:
            log.error("periodic task %r is invalid and is not scheduled: %s", row.name, exc)
    return entries


def scheduler_store() -> SchedulerStore:
    """The periodic entries' store of the configured Redis: with ``TASKS_KEY_FORMAT`` "asynq", the entries and
    history Go asynq's schedulers publish (read only), on the inspector's broker: taskq's Client refuses asynq's keys
    (``key_format``)."""
    if conf.taskq_settings().key_format == "asynq":
        return AsynqSchedulerStore(conf.get_inspector().broker)
    return SchedulerStore(conf.get_client().broker)


def sync_periodic() -> int:
    """Replace the entries in Redis with the database's; returns the new version. Raises EngineError."""
    return scheduler_store().write_config(current_entries())
