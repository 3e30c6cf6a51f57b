"""The one place where redis-py's exceptions are named: everything else in taskq sees the engine's errors.

- A connection that fails or times out becomes ``RedisUnavailableError`` naming the operation (the exception
  chained, for the log).
- An error reply to a transition script is the script's ``"<CODE> <detail>"`` and becomes the named error for
  CODE (``errors.SCRIPT_ERRORS``); any other error reply becomes ``RedisCommandError``.
- A bad URL, or a server that cannot be reached when a client is made, becomes ``RedisUnavailableError``
  (``connecting``), its password left out.
- A NOSCRIPT reply (Redis restarted, or its script cache was flushed) is not an error at all: the broker sends
  the script once in full, which caches it again (``broker.scripting``).

``translated(op)`` is the context manager (usable around ``await`` too) that the broker's calls go through;
``call(op, fn, ...)`` is its one-call form. A test fails when a module outside the broker catches a redis-py
exception by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.exceptions import RedisClusterException

from ..errors import SCRIPT_ERRORS, EngineError, RedisCommandError, RedisUnavailableError, ValidationError
from ..quoting import shown
from .topology import redact

# A Redis Cluster passing through a failover: a slot with no master yet (CLUSTERDOWN, MASTERDOWN), a slot that
# moved or is moving (MOVED, ASK, TRYAGAIN), no node covering a slot. Each lasts about cluster-node-timeout, so
# each is retried with backoff like a lost connection, never reported as a failed command.
_CLUSTER_IN_TRANSIT = (
    redis.exceptions.ClusterError
    | redis.exceptions.TryAgainError
    | redis.exceptions.AskError
    | redis.exceptions.SlotNotCoveredError
)


def unavailable(op: str, exc: BaseException) -> RedisUnavailableError:
    return RedisUnavailableError(f"Redis is unreachable: {exc}", op=op)


def script_error(script: str, op: str, exc: BaseException) -> EngineError:
    """A script's ``"<CODE> <detail>"`` error reply as the named error for CODE."""
    text = str(exc)
    code, _, detail = text.partition(" ")
    kind = SCRIPT_ERRORS.get(code)
    if kind is None:
        return EngineError(f"script {script} failed: {text}", op=op)
    return kind(detail or code, op=op)


def translate(op: str, exc: BaseException, script: str | None = None) -> BaseException:
    """The engine's error for a redis-py exception (``exc`` itself when it is none of redis-py's)."""
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError | _CLUSTER_IN_TRANSIT):
        return unavailable(op, exc)
    if isinstance(exc, redis.ResponseError):
        return script_error(script, op, exc) if script else RedisCommandError(str(exc), op=op)
    if isinstance(exc, redis.RedisError):
        return RedisCommandError(f"{type(exc).__name__}: {exc}", op=op)
    return exc


@contextmanager
def connecting(url: str) -> Iterator[None]:
    """Opening a client for ``url``: a bad URL, or a server that cannot be reached at once (a cluster client reads
    the slot map when it is made), raises RedisUnavailableError with the password left out."""
    try:
        yield
    except (ValueError, redis.RedisError, RedisClusterException) as exc:
        raise _bad_url(url, exc) from None


def _bad_url(url: str, exc: Exception) -> RedisUnavailableError:
    if isinstance(exc, ValidationError):
        return RedisUnavailableError(exc.message, op="connect")
    if isinstance(exc, redis.RedisError | RedisClusterException):
        return RedisUnavailableError(f"Redis at {shown(redact(url))} is unreachable: {exc}", op="connect")
    return RedisUnavailableError(f"bad Redis URL {shown(redact(url))}: {exc}", op="connect")


@contextmanager
def translated(op: str, script: str | None = None) -> Iterator[None]:
    """Run the body with redis-py's exceptions raised as the engine's (see the module docstring); ``script``
    names the transition script whose error replies carry an engine error code."""
    try:
        yield
    except (redis.RedisError, redis.exceptions.SlotNotCoveredError) as exc:
        error = translate(op, exc, script)
        # Unreachable: keep the cause for the log. An error reply says all there is: no redis-py traceback.
        raise error from (exc if isinstance(error, RedisUnavailableError) else None)


def call(op: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a redis-py method, a pipeline's execute...) with its errors translated."""
    with translated(op):
        return fn(*args, **kwargs)
