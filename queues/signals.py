"""Saving or deleting a definition or policy mirrors the whole current set into Redis, once the transaction
commits (a rolled-back change must not reach the workers)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from .engine import EngineError
from .engine.errors import FormatUnsupportedError
from .models import PeriodicTask, QueueDefinition, RetentionPolicy, UniquePolicy
from .periodic_sync import sync_periodic
from .policy_sync import sync_policies

log = logging.getLogger("taskq.queues.signals")

MIRRORED = (QueueDefinition, UniquePolicy, RetentionPolicy)


def mirror_quietly(what: str, sync: Callable[[], int]) -> None:
    """Mirror after a save or delete. A Redis outage must not fail the admin's save: it is logged, and the next
    save, or ``manage.py tasks_sync_policies``, mirrors the whole set again. Where the Redis holds asynq's keys
    nothing is mirrored (``key_format``), and the save still stands."""
    try:
        version = sync()
    except FormatUnsupportedError as exc:  # asynq's keys: nothing of taskq's is mirrored there, by design
        log.info("the %s are not mirrored: %s", what, exc)
    except EngineError as exc:
        log.error(
            "could not mirror the %s into Redis: %s; run 'manage.py tasks_sync_policies' when Redis is back", what, exc
        )
    else:
        log.info("%s mirrored into Redis (version %d)", what, version)


def mirror_on_commit(sender: Any, **kwargs: Any) -> None:
    transaction.on_commit(lambda: mirror_quietly("queue definitions and policies", sync_policies))


def mirror_periodic_on_commit(sender: Any, **kwargs: Any) -> None:
    transaction.on_commit(lambda: mirror_quietly("periodic tasks", sync_periodic))


def connect() -> None:
    for model in MIRRORED:
        post_save.connect(mirror_on_commit, sender=model, dispatch_uid=f"mirror-save-{model.__name__}")
        post_delete.connect(mirror_on_commit, sender=model, dispatch_uid=f"mirror-delete-{model.__name__}")
    post_save.connect(mirror_periodic_on_commit, sender=PeriodicTask, dispatch_uid="mirror-save-PeriodicTask")
    post_delete.connect(mirror_periodic_on_commit, sender=PeriodicTask, dispatch_uid="mirror-delete-PeriodicTask")
