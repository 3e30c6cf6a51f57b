"""Saving or deleting a definition or policy mirrors the whole current set into Redis, once the transaction
commits (a rolled-back change must not reach the workers)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from .models import PeriodicTask, QueueDefinition, RetentionPolicy, UniquePolicy

MIRRORED = (QueueDefinition, UniquePolicy, RetentionPolicy)


def mirror_on_commit(sender: Any, **kwargs: Any) -> None:
    from .policies import sync_quietly

    transaction.on_commit(sync_quietly)


def mirror_periodic_on_commit(sender: Any, **kwargs: Any) -> None:
    from .periodic import sync_quietly

    transaction.on_commit(sync_quietly)


def connect() -> None:
    for model in MIRRORED:
        post_save.connect(mirror_on_commit, sender=model, dispatch_uid=f"mirror-save-{model.__name__}")
        post_delete.connect(mirror_on_commit, sender=model, dispatch_uid=f"mirror-delete-{model.__name__}")
    post_save.connect(mirror_periodic_on_commit, sender=PeriodicTask, dispatch_uid="mirror-save-PeriodicTask")
    post_delete.connect(mirror_periodic_on_commit, sender=PeriodicTask, dispatch_uid="mirror-delete-PeriodicTask")
