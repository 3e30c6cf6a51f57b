"""taskq's settings as Django has them, and the engine they configure: everything Django-side gets its settings,
Client and Inspector here.

One rule for reading settings: every setting ``taskq.queues.engine.settings.TaskqSettings`` declares (``REDIS_URL``, the
``TASKS_*`` and the ``SPARK_*``, and ``TASKS_REDACT``, its Django form of the two redaction lists) is read through
``taskq_settings()``, typed and with its default from there; only this module looks them up by name. Django's own
settings and the console's (``DEBUG``, ``METRICS_TOKEN``, ``RQ_QUEUES``...) are plain ``django.conf.settings``
reads where they are used. ``tests/test_settings_one_way.py`` holds the product to it.

``taskq_settings()`` is built once and kept until Django's settings change, so a request reads attributes of one
object instead of looking up forty settings. Tests change them with ``override_settings`` or pytest-django's
``settings`` fixture: both put a new settings object in place, which the cache is keyed on, and send
``setting_changed``, which empties it (pytest-django's ``del settings.X`` sends nothing, hence the key).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from . import handles, key_format
from .engine import Client, Inspector, Limits, RedisUnavailableError, ValidationError
from .engine.asynq import AsynqClient
from .engine.broker import topology
from .engine.quoting import shown
from .engine.settings import TaskqSettings
from .engine.validation import PayloadLimits


def taskq_settings() -> TaskqSettings:
    """All of taskq's settings as the project has them, typed; a setting it leaves out has its default. A value
    that cannot be read (a lease of "soon", a malformed ``TASKS_REDACT``) raises ImproperlyConfigured naming it."""
    return _settings_in(settings._wrapped)


@lru_cache(maxsize=1)
def _settings_in(holder: object) -> TaskqSettings:
    """``holder``: the settings object in force, only the cache's key (see the module's docstring)."""
    try:
        return TaskqSettings.from_lookup(lambda name, missing: getattr(settings, name, missing))
    except ValidationError as exc:
        raise ImproperlyConfigured(exc.message) from None


def project_sets(name: str) -> bool:
    """Whether the project's settings give taskq's setting ``name`` at all, rather than leave it to its default
    (a system check warns about a deployment without ``REDIS_URL``)."""
    return hasattr(settings, name)


def redis_url_problem(url: object) -> str | None:
    """Why ``url``, as the REDIS_URL setting, cannot be used (malformed: checked without connecting), or None.
    The system check ``taskq.E103`` reports it, and the first use of Redis in a process that runs no checks raises
    it (``usable_redis_url``)."""
    if not isinstance(url, str):
        return f"REDIS_URL must be a Redis URL (a string), not {shown(url)}"
    try:
        topology.validate(url)
    except ValidationError as exc:
        return f"REDIS_URL: {exc.message}"
    return None


def usable_redis_url(s: TaskqSettings) -> str:
    """``s.redis_url``, once it is known to be well formed; a malformed one raises RedisUnavailableError with the
    text of ``taskq.E103``, naming the setting (what every surface reports as "Redis unavailable": the console's
    error page, the CLI's error line, the HTTP API's 503)."""
    problem = redis_url_problem(s.redis_url)
    if problem is not None:
        raise RedisUnavailableError(problem, op="settings")
    return s.redis_url


def _forget_settings(**kwargs: Any) -> None:
    # Every change, not only taskq's: telling them apart costs more than building the object again on next use.
    _settings_in.cache_clear()


# Connected at import, so before taskq.queues.apps's receiver (connected in ready(), after this module is imported),
# which rebuilds the default client from the new settings: Django calls receivers in the order they connected.
setting_changed.connect(_forget_settings, dispatch_uid="taskq.queues.conf.taskq_settings")


def get_client() -> Client:
    """A shared client for the configured Redis (one connection pool per URL and prefix; see ``handles``).

    Raises:
        FormatUnsupportedError: the Redis holds asynq's keys (``TASKS_KEY_FORMAT``), which this client would write
            taskq's into (see ``key_format``).
    """
    s = taskq_settings()
    key_format.refuse_taskq_writes(s, "taskq's Client", "client")
    return handles.shared(
        ("client", s.redis_url, s.key_prefix, s.eager, s.eager_propagates, s.max_payload_depth),
        lambda: _new_client(s),
    )


def _new_client(s: TaskqSettings) -> Client:
    usable_redis_url(s)  # named as the setting's fault, before the engine meets it as a bad URL
    return Client.from_settings(s)


def get_asynq_client() -> AsynqClient:
    """A shared client that enqueues into asynq's keys (``TASKS_KEY_FORMAT = "asynq"``) on the configured Redis, as
    asynq's Go client does: one connection pool per URL, as ``get_client``."""
    s = taskq_settings()
    return handles.shared(
        ("asynq_client", s.redis_url, s.max_payload_depth),
        lambda: AsynqClient(usable_redis_url(s), max_payload_depth=s.max_payload_depth),
    )


def get_inspector(actor: str = "operator") -> Inspector:
    """The process's inspector for the configured Redis, acting for ``actor``: one inspector, with its connection
    pool, per URL, prefix and key format (see ``handles``; ``TASKS_KEY_FORMAT`` "asynq" reads Go asynq's keys), of
    which each caller gets a view whose actions record its actor (``Inspector.acting_as``). Nothing about a caller is
    kept on the shared inspector, so threads use it at once."""
    s = taskq_settings()
    limits = Limits.from_settings(s)
    shared = handles.shared(
        # Every setting the inspector is built from (the limits by their repr: a dataclass holding a dict).
        ("inspector", s.redis_url, s.key_prefix, s.key_format, s.max_payload_depth, repr(limits)),
        lambda: Inspector(
            usable_redis_url(s),
            prefix=s.key_prefix,
            limits=limits,
            payload_limits=PayloadLimits(max_depth=s.max_payload_depth),
            key_format=s.key_format,
        ),
    )
    return shared.acting_as(actor)
