"""What a command runs against: the engine as Django settings configure it, built on first use."""

from __future__ import annotations

import getpass
import time
from functools import cached_property

from taskq.queues.audit import record_action
from taskq.queues.conf import get_asynq_client, get_client, get_inspector
from taskq.queues.engine import Client, Inspector
from taskq.queues.engine.asynq import AsynqClient


def actor() -> str:
    """``cli:<login>``, recorded in the event of every action the CLI takes, and in its audit log entry."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        user = "unknown"
    return f"cli:{user}"


def audited(
    action: str, queue: str = "", task_ids: list[str] | None = None, detail: str = "", task_count: int | None = None
) -> None:
    """Write the audit log entry of an action the CLI took, as the console writes the same button's (``action``
    named alike: ``pause_queue``, ``run_task``, ``delete_all``...): the record of who did what, and the only one
    on asynq's keys, which carry no event stream. ``task_count``: how many tasks a whole state's action took."""
    record_action(None, action, queue, task_ids, detail, username=actor(), task_count=task_count)


class Context:
    """Lazily opens the engine so ``tasks --help`` and usage errors never touch Redis."""

    @cached_property
    def inspector(self) -> Inspector:
        return get_inspector(actor=actor())

    @cached_property
    def client(self) -> Client:
        return get_client()

    @cached_property
    def asynq_client(self) -> AsynqClient:
        """The producer for asynq's keys, which ``task enqueue`` uses when ``TASKS_KEY_FORMAT = "asynq"``."""
        return get_asynq_client()

    def now(self) -> float:
        return time.time()
