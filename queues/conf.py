"""The engine as configured by Django settings. Everything Django-side gets its Client and Inspector here."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from . import handles
from .engine import Client, Inspector, Limits
from .engine.settings import TaskqSettings
from .engine.settings import default as taskq_default
from .engine.validation import PayloadLimits

#: ``setting(name)`` without a default: take queues.engine.settings'.
_DEFAULT = object()


def setting(name: str, default: Any = _DEFAULT) -> Any:
    """A Django setting; for one of taskq's, its default comes from ``queues.engine.settings`` (the one place
    defaults are written) when the project leaves it out."""
    value = getattr(settings, name, _DEFAULT)
    if value is not _DEFAULT:
        return value
    return taskq_default(name) if default is _DEFAULT else default


def taskq_settings() -> TaskqSettings:
    """All of taskq's settings as the project has them, typed."""
    return TaskqSettings.from_lookup(lambda name, missing: getattr(settings, name, missing))


def redis_url() -> str:
    return str(setting("REDIS_URL"))


def key_prefix() -> str:
    return str(setting("TASKS_KEY_PREFIX"))


def eager_mode() -> tuple[bool, bool]:
    """``(TASKS_EAGER, TASKS_EAGER_PROPAGATES)``: whether enqueueing runs the handler inline instead of writing to
    Redis (tests; see engine.eager), and whether the handler's exception is then raised to whoever enqueued."""
    return bool(setting("TASKS_EAGER")), bool(setting("TASKS_EAGER_PROPAGATES"))


def export_dir() -> str:
    """Where the exporter writes the event Parquet files (``date=YYYY-MM-DD/`` partitions)."""
    return str(setting("TASKS_EVENT_EXPORT_DIR"))


def rollup_dir() -> str:
    """Where the analytics job writes its Parquet rollups (``day=YYYY-MM-DD/`` partitions)."""
    return str(setting("TASKS_ROLLUP_DIR"))


def limits() -> Limits:
    return Limits(
        event_maxlen=int(setting("TASKS_EVENT_STREAM_MAXLEN")),
        archive_max_size=int(setting("TASKS_ARCHIVE_MAX_SIZE")),
        archive_max_age=float(setting("TASKS_ARCHIVE_MAX_AGE_SECONDS")),
    )


def max_payload_depth() -> int:
    """``TASKS_MAX_PAYLOAD_DEPTH``: how deeply a payload may nest, and how deeply the console parses stored ones."""
    return int(setting("TASKS_MAX_PAYLOAD_DEPTH"))


def get_client() -> Client:
    """A shared client for the configured Redis (one connection pool per URL and prefix; see ``handles``)."""
    url, prefix, depth = redis_url(), key_prefix(), max_payload_depth()
    is_eager, propagates = eager_mode()
    return handles.shared(
        ("client", url, prefix, is_eager, propagates, depth),
        lambda: Client(url, prefix=prefix, eager=is_eager, eager_propagates=propagates, max_payload_depth=depth),
    )


def get_inspector(actor: str = "operator") -> Inspector:
    """A shared inspector whose events name ``actor`` (see ``handles``)."""
    url, prefix, depth = redis_url(), key_prefix(), max_payload_depth()
    return handles.shared(
        ("inspector", url, prefix, actor, depth),
        lambda: Inspector(
            url, prefix=prefix, actor=actor, limits=limits(), payload_limits=PayloadLimits(max_depth=depth)
        ),
    )
