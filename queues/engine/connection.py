"""Opening Redis connections from URLs, and the start-up safety check on the eviction policy."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio

from .errors import RedisUnavailableError

log = logging.getLogger("queues.engine")

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

# A connection that hangs forever is worse than one that fails: the worker's loops must get control back.
_SOCKET_OPTIONS = {"socket_connect_timeout": 5.0, "health_check_interval": 30}


def redact(url: str) -> str:
    """The URL with its password replaced, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str = DEFAULT_REDIS_URL, **options: Any) -> redis.Redis:
    """A client for ``redis://``, ``rediss://`` (TLS) or ``unix://`` URLs, with ACL user and password if given."""
    try:
        return redis.Redis.from_url(url, **{**_SOCKET_OPTIONS, **options})
    except ValueError as exc:
        raise RedisUnavailableError(f"bad Redis URL {redact(url)!r}: {exc}", op="connect") from None


def connect_async(url: str = DEFAULT_REDIS_URL, **options: Any) -> redis.asyncio.Redis:
    try:
        return redis.asyncio.Redis.from_url(url, **{**_SOCKET_OPTIONS, **options})
    except ValueError as exc:
        raise RedisUnavailableError(f"bad Redis URL {redact(url)!r}: {exc}", op="connect") from None


def warn_if_evicting(conn: redis.Redis) -> str | None:
    """Log loudly when Redis may evict keys: an evicted task hash or list is a task silently lost.

    Returns the policy, or None when it cannot be read (managed Redis often forbids CONFIG).
    """
    try:
        raw: Any = conn.config_get("maxmemory-policy").get("maxmemory-policy")
    except redis.ResponseError:
        return None
    policy = raw.decode() if isinstance(raw, bytes) else raw
    if policy and policy != "noeviction":
        log.warning(
            "Redis maxmemory-policy is %r: under memory pressure Redis will evict keys and tasks will be lost "
            "without a trace. Set it to 'noeviction'.",
            policy,
        )
    return policy


def database_of(conn: redis.Redis) -> int:
    """The database number a client selects (0 for a cluster or when unset)."""
    return int(conn.connection_pool.connection_kwargs.get("db", 0) or 0)
