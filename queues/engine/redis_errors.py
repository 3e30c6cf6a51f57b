"""The one place where redis-py's exceptions are named: everything else in taskq sees the engine's errors.

- A connection that fails or times out becomes ``RedisUnavailableError`` naming the operation (the exception
  chained, for the log).
- An error reply to a transition script is the script's ``"<CODE> <detail>"`` and becomes the named error for
  CODE (``errors.SCRIPT_ERRORS``); any other error reply becomes ``RedisCommandError``.
- A bad URL, or a server that cannot be reached when a client is made, becomes ``RedisUnavailableError``
  (``connecting``), its password left out.
- A NOSCRIPT reply (Redis restarted, or its script cache was flushed) is not an error at all: ``run_script``
  (and ``run_scripts_pipelined``) sends the script once in full, which caches it again.

``translated(op)`` is the context manager (usable around ``await`` too) that every Redis call outside the broker
goes through; ``call(op, fn, ...)`` is its one-call form. A test fails when another module catches a redis-py
exception by itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import redis
from hiredis import pack_command
from redis.exceptions import NoScriptError, RedisClusterException

from .errors import SCRIPT_ERRORS, EngineError, RedisCommandError, RedisUnavailableError, ValidationError
from .quoting import shown
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


def on_slot_master(conn: Any, key: str, fn: Callable[[Any], Any]) -> Any:
    """``fn(node)`` with ``node`` the connection to the master of ``key``'s slot, for what must bypass the cluster
    client's own routing (a script and its WAIT on one connection). A slot that moved (MOVED) or a master gone
    (the connection fails) makes the client read the slot map again, and ``fn`` runs once more on the slot's
    master now; a second failure is raised, for the caller's ``translated``."""
    try:
        return fn(conn.get_redis_connection(conn.get_node_from_key(key)))
    except (redis.exceptions.MovedError, redis.ConnectionError, redis.TimeoutError):
        try:
            conn.nodes_manager.initialize()
        except (redis.RedisError, RedisClusterException):
            pass  # no node answers yet: the second try fails the same way, and the caller retries later
    return fn(conn.get_redis_connection(conn.get_node_from_key(key)))


def is_missing_script(reply: Any) -> bool:
    """Whether a reply (or a raised exception) is NOSCRIPT: the script must be sent in full once."""
    return isinstance(reply, NoScriptError)


def run_script(conn: Any, sha: str, source: str, keys: list[str], args: list[Any]) -> Any:
    """EVALSHA, and EVAL after a NOSCRIPT reply. Other errors are left to the caller's ``translated``."""
    try:
        return conn.evalsha(sha, len(keys), *keys, *args)
    except NoScriptError:
        return conn.eval(source, len(keys), *keys, *args)


async def run_script_async(conn: Any, sha: str, source: str, keys: list[str], args: list[Any]) -> Any:
    try:
        return await conn.evalsha(sha, len(keys), *keys, *args)
    except NoScriptError:
        return await conn.eval(source, len(keys), *keys, *args)


def run_function(
    conn: Any, name: str, keys: list[str], args: list[Any], load: Callable[[], Any], as_script: Callable[[], Any]
) -> Any:
    """FCALL, and after a "function not found" reply ``load()`` and FCALL once more (see functions.py). Over
    maxmemory Redis refuses a function before it runs, where a script runs until its first command that would
    grow memory (so an acknowledgement, which frees some, still goes through): an OOM reply runs ``as_script()``
    (EVALSHA) instead, which keeps the script's behaviour exactly."""
    for attempt in range(2):
        try:
            return conn.execute_command("FCALL", name, len(keys), *keys, *args)
        except redis.ResponseError as exc:
            if isinstance(exc, redis.exceptions.OutOfMemoryError):
                return as_script()
            if attempt or "function not found" not in str(exc).lower():
                raise
        load()


def load_library(conn: Any, code: str) -> bool | None:
    """FUNCTION LOAD: True when the library is there (loaded now or before), False when the server refuses it (no
    FUNCTION, an ACL), None when Redis could not be reached."""
    try:
        conn.execute_command("FUNCTION", "LOAD", code)
    except redis.ResponseError as exc:
        return "already exists" in str(exc)
    except (redis.ConnectionError, redis.TimeoutError):
        return None
    return True


#: A script to run: its SHA, its source (sent after a NOSCRIPT reply), its keys, its arguments, and the name of the
#: function that runs it where the server has them ("": none, or EVALSHA wanted; see functions.py).
ScriptRun = tuple[str, str, list[str], list[Any], str]


def function_did_not_run(reply: Any) -> bool:
    """Whether an FCALL's error reply says the function never ran, so it may be sent again: the library is not
    loaded (FUNCTION FLUSH, a restart without persistence), or Redis is over maxmemory and refused it before it
    ran (see ``run_function``)."""
    return isinstance(reply, redis.exceptions.OutOfMemoryError) or (
        isinstance(reply, redis.ResponseError) and "function not found" in str(reply).lower()
    )


class KeptConnection:
    """One connection of a client's pool, kept by a caller that never runs two requests at once (the client's
    enqueue rounds) instead of checked out of the pool and back for each call: that checkout is a good part of
    redis-py's cost per command. Taken on first use; after a fork the child takes its own (the parent's socket is
    left to the parent). Closing the client's pool disconnects it like any connection in use, and the next use
    connects again."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._connection: Any = None
        self._pid = 0

    def get(self) -> Any:
        """The kept connection, ready to send, as the pool checks one it hands out: connected, and with nothing
        to read (the server closed it, after a restart or an idle timeout), else connected again."""
        pid = os.getpid()
        if self._connection is None or self._pid != pid:
            self._connection = self._conn.connection_pool.get_connection()  # checked by the pool
            self._pid = pid
            return self._connection
        connection = self._connection
        try:
            connection.connect()  # nothing when it is connected
            if connection.can_read():
                raise redis.ConnectionError("connection has data")
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            connection.disconnect()
            connection.connect()
        return connection


def run_scripts_pipelined(
    conn: Any,
    runs: Sequence[ScriptRun],
    meanwhile: Callable[[], Any],
    load: Callable[[], Any],
    kept: KeptConnection | None = None,
) -> list[Any]:
    """Send each script on one pooled connection (or on ``kept``, a ``KeptConnection``'s) without waiting for the
    replies before, so Redis runs one while the next is packed and sent; run ``meanwhile()`` (the caller's own
    work) once all are sent; then read the replies in order. An error reply is returned as its redis-py
    exception, not raised. A connection that fails ends the list with that exception: the replies before it are
    known, the scripts after it unknown. A run that names its function goes out as FCALL, the others as EVALSHA.
    Scripts that answered NOSCRIPT, and functions that did not run (not loaded: ``load()`` loads the library and
    the function is called again; over maxmemory: EVALSHA instead, as ``run_function`` does),
    are sent again one by one, in order, once the others are read. Each call is packed by hiredis directly:
    redis-py's packer looks at every argument in Python first."""
    pool = conn.connection_pool
    try:
        connection = pool.get_connection() if kept is None else kept.get()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return [exc]
    replies: list[Any] = []
    read_all = False
    try:
        for sha, _source, keys, args, function in runs:
            command = ("FCALL", function) if function else ("EVALSHA", sha)
            connection.send_packed_command((pack_command((*command, len(keys), *keys, *args)),))
        meanwhile()
        for _run in runs:
            try:
                replies.append(connection.read_response())
            except redis.ResponseError as exc:
                replies.append(exc)
        read_all = True
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        connection.disconnect()
        return [*replies, exc]
    finally:
        if not read_all:
            # Interrupted (KeyboardInterrupt...): a reply left unread would answer the next call on it. The pool's
            # own check on checkout misses a reply that has not arrived yet.
            connection.disconnect()
        if kept is None:
            pool.release(connection)
    for n, reply in enumerate(replies):
        sha, source, keys, args, function = runs[n]
        try:
            if is_missing_script(reply):
                replies[n] = conn.eval(source, len(keys), *keys, *args)
            elif function and function_did_not_run(reply):
                as_script = partial(run_script, conn, sha, source, keys, args)
                replies[n] = run_function(conn, function, keys, args, load, as_script)
        except redis.RedisError as exc:
            replies[n] = exc
    return replies


async def run_scripts_pipelined_async(conn: Any, runs: Sequence[ScriptRun], meanwhile: Callable[[], Any]) -> list[Any]:
    """``run_scripts_pipelined`` on an asyncio client."""
    pool = conn.connection_pool
    try:
        connection = await pool.get_connection()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return [exc]
    replies: list[Any] = []
    try:
        for sha, _source, keys, args, _function in runs:  # no functions on asyncio clients: EVALSHA
            await connection.send_command("EVALSHA", sha, len(keys), *keys, *args)
        meanwhile()
        for _run in runs:
            try:
                replies.append(await connection.read_response())
            except redis.ResponseError as exc:
                replies.append(exc)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        await connection.disconnect()
        return [*replies, exc]
    finally:
        await pool.release(connection)
    for n, reply in enumerate(replies):
        if is_missing_script(reply):
            _sha, source, keys, args, _function = runs[n]
            try:
                replies[n] = await conn.eval(source, len(keys), *keys, *args)
            except redis.RedisError as exc:
                replies[n] = exc
    return replies
