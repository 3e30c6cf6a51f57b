"""The system check of ``TASKS_KEY_FORMAT = "asynq"`` (``manage.py check``, and every command that runs checks),
which looks at the Redis itself, since a wrong format shows only there:

- taskq.W106: the Redis holds none of asynq's global keys (``asynq:queues``, ``asynq:servers``,
  ``asynq:schedulers``): no Go asynq deployment has written there yet, or ``REDIS_URL`` names another database.
- taskq.W107: taskq's own keys are there too (its queue set or its layout stamp, under ``TASKS_KEY_PREFIX``):
  something wrote taskq's keys into the asynq Redis, or the setting is wrong for this Redis.
- taskq.W108: the Redis did not answer, so neither could be checked.

Warnings, not errors: an asynq deployment that has enqueued nothing yet is a real state, and the console still
serves it. With the default ``TASKS_KEY_FORMAT = "taskq"`` the check reads nothing.
"""

from __future__ import annotations

from typing import Any

from django.core import checks

from . import conf, key_format
from .engine.asynq.keys import ALL_QUEUES, ALL_SCHEDULERS, ALL_SERVERS
from .engine.broker import Broker
from .engine.errors import EngineError

ASYNQ_GLOBAL_KEYS = (ALL_QUEUES, ALL_SERVERS, ALL_SCHEDULERS)
HINT = 'TASKS_KEY_FORMAT = "asynq" says REDIS_URL is a Go asynq deployment\'s Redis (see docs/asynq.md).'


@checks.register()
def check_key_format(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # Not scoped to app_configs: the setting is the whole process's, as REDIS_URL's check is.
    s = conf.taskq_settings()
    if not key_format.on_asynq(s) or conf.redis_url_problem(s.redis_url) is not None:
        return []  # taskq's own keys, or a malformed URL (taskq.E103 says so)
    try:
        asynq_keys, taskq_keys = _found(s.redis_url, s.key_prefix)
    except EngineError as exc:
        return [checks.Warning(f"cannot check the keys of REDIS_URL's Redis: {exc}", hint=HINT, id="taskq.W108")]
    found: list[checks.CheckMessage] = []
    if not asynq_keys:
        found.append(
            checks.Warning(
                f"REDIS_URL's Redis holds no asynq keys ({', '.join(ASYNQ_GLOBAL_KEYS)} are all missing): no Go asynq "
                "deployment has written there yet, or REDIS_URL names another Redis or database",
                hint=HINT,
                id="taskq.W106",
            )
        )
    if taskq_keys:
        found.append(
            checks.Warning(
                f"REDIS_URL's Redis holds taskq's own keys ({', '.join(taskq_keys)}) beside asynq's: "
                "TASKS_KEY_FORMAT may be wrong for this Redis, or something wrote taskq's keys into it",
                hint=HINT,
                id="taskq.W107",
            )
        )
    return found


def _found(redis_url: str, prefix: str) -> tuple[int, list[str]]:
    """How many of asynq's global keys exist, and which of taskq's own (its queue set, its layout stamp)."""
    broker = Broker(redis_url, prefix=prefix)
    try:
        asynq_keys = int(broker.send("checks.key_format", "exists", *ASYNQ_GLOBAL_KEYS))
        taskq_keys = [
            key for key in (broker.keys.queues, broker.keys.layout) if broker.send("checks.key_format", "exists", key)
        ]
    finally:
        broker.close()
    return asynq_keys, taskq_keys
