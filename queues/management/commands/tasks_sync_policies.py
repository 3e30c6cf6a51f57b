"""``python manage.py tasks_sync_policies``: mirror the queue definitions and policies into Redis."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from taskq.queues.engine import EngineError
from taskq.queues.periodic_sync import current_entries, sync_periodic
from taskq.queues.policy_sync import current_policies, sync_policies


class Command(BaseCommand):
    help = (
        "Write the queue definitions, unique and retention policies of the database to Redis (saving one in "
        "the admin does this too; run it after loading fixtures or when Redis was away)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            version = sync_policies()
            periodic_version = sync_periodic()
        except EngineError as exc:
            raise CommandError(str(exc)) from None
        policies = current_policies()
        self.stdout.write(
            f"mirrored {len(policies.queues)} queue definition(s), {len(policies.unique)} unique "
            f"and {len(policies.retention)} retention polic(ies) into Redis (version {version}), and "
            f"{len(current_entries())} periodic task(s) (version {periodic_version})"
        )
