"""Enqueueing from Django code that runs inside a database transaction.

A task enqueued before the transaction commits may run before its rows are visible, or after they were
rolled back. ``enqueue_on_commit`` validates now (so bad input fails in the request) and enqueues when the
transaction commits; outside a transaction it enqueues at once, as Django's ``on_commit`` does.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from .conf import get_client
from .engine import producer_tracing
from .engine.producer import new_task_id


def enqueue_on_commit(task_type: str, payload: Any = b"", *, using: str | None = None, **options: Any) -> str:
    """Returns the task id now; the task is enqueued when the surrounding transaction commits."""
    client = get_client()
    options.setdefault("task_id", new_task_id())
    client.validate(task_type, payload, op="enqueue_on_commit", **options)
    # Bound to the trace context of now: the enqueue at the commit joins the trace of the call that asked for it.
    transaction.on_commit(producer_tracing.bound(lambda: client.enqueue(task_type, payload, **options)), using=using)
    return str(options["task_id"])
