"""Django's own ``@task`` functions, run by the demo's taskworker through ``taskq.tasks_backend.TaskqBackend``
(demo/settings.py's TASKS): no ``@handler``, the worker finds each by its module path. ``demo_traffic`` enqueues
a few of each, so the console shows Django tasks, SUCCESSFUL and FAILED, beside taskq's own."""

from __future__ import annotations

import random
from typing import Any

from taskq.queues.tasks_framework import PACKAGE

if PACKAGE == "django.tasks":  # Django 6
    from django.tasks import task
else:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task
def send_welcome(user_id: int, *, locale: str = "en") -> dict[str, Any]:
    return {"user": user_id, "locale": locale, "sent": True}


@task(takes_context=True)
def sync_invoice(context: Any, invoice: int) -> str:
    """Fails one time in three, so FAILED Django tasks show too (the demo backend does not retry)."""
    if random.random() < 1 / 3:
        raise ConnectionError(f"billing API timed out for invoice {invoice}")
    return f"invoice {invoice} synced on attempt {context.attempt}"


@task
async def warm_cache(keys: list[str]) -> int:
    return len(keys)
