"""Mirroring the definitions and policies of the database into Redis, where the engine reads them."""

from __future__ import annotations

import logging

from . import conf
from .engine.policies import PolicySet, PolicyStore, QueueSpec, RetentionRule
from .models import QueueDefinition, RetentionPolicy, UniquePolicy

log = logging.getLogger("taskq.queues.policy_sync")


def current_policies() -> PolicySet:
    """The whole set as the database holds it now."""
    queues = {
        d.name: QueueSpec(
            d.name,
            d.weight,
            d.rank,
            d.concurrency_cap,
            _float_or_none(d.group_grace_period),
            _float_or_none(d.group_max_delay),
            d.group_max_size,
            d.rate_limit,
            float(d.rate_period),
        )
        for d in QueueDefinition.objects.all()
    }
    unique = {p.type_pattern: float(p.ttl) for p in UniquePolicy.objects.all()}
    retention = tuple(
        RetentionRule(
            p.queue,
            p.type_pattern,
            None if p.completed_retention is None else float(p.completed_retention),
            p.archive_max_size,
            None if p.archive_max_age is None else float(p.archive_max_age),
        )
        for p in RetentionPolicy.objects.all()
    )
    return PolicySet(queues, unique, retention)


def _float_or_none(value: int | None) -> float | None:
    return None if value is None else float(value)


def policy_store() -> PolicyStore:
    client = conf.get_client()
    return PolicyStore(client.broker)


def sync_policies() -> int:
    """Write the whole set to Redis in one transaction; returns the new version. Raises EngineError."""
    return policy_store().write(current_policies())
