"""The system check of ``REDIS_URL`` (``manage.py check``, and every command that runs checks: ``runserver``,
``migrate``, ``taskworker``, ``taskscheduler``):

- taskq.E103: ``REDIS_URL`` is malformed (a scheme taskq does not speak, a port or database that is no number, a
  sentinel or cluster URL it cannot read), checked without connecting. Such a command then refuses to start,
  with this message, instead of failing later.

Start-up builds nothing from the URL (``taskq.queues.apps``), so a process that runs no checks (a bare ``daphne``, the
``tasks`` command, ``shell``) starts too, and meets the same text as a RedisUnavailableError at its first use of
Redis (``conf.usable_redis_url``). An unset ``REDIS_URL`` is the Django tasks backend's warning, taskq.W103.
"""

from __future__ import annotations

from typing import Any

from django.core import checks

from . import conf

HINT = (
    "Give a URL such as redis://127.0.0.1:6379/0, rediss://user:password@host:6380/0, "
    "redis+sentinel://host:26379/mymaster or redis+cluster://host:7000 (see docs/settings.md)."
)


@checks.register()
def check_redis_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # Not scoped to app_configs: the setting is the whole process's, as Django's own checks of settings are.
    problem = conf.redis_url_problem(conf.taskq_settings().redis_url)
    if problem is None:
        return []
    return [checks.Error(problem, hint=HINT, id="taskq.E103")]
