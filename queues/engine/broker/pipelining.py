"""Sending many commands on one connection without waiting for each reply: Redis runs one while the next is packed
and sent. The commands come from ``scripting.first``; what is sent again afterwards (NOSCRIPT, a function that did
not run) is ``scripting.settle_all``'s to decide.

Also the connection a blocking broker keeps for a caller that never runs two pipelines at once
(``KeptConnection``): the enqueue coalescer, whose rounds never overlap (see ``coalescing``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import redis
from hiredis import pack_command

from .scripting import Wire


class KeptConnection:
    """One connection of a client's pool, kept by a caller that never runs two requests at once instead of checked
    out of the pool and back for each call: that checkout is a good part of redis-py's cost per command. Taken on
    first use; after a fork the child takes its own (the parent's socket is left to the parent). Closing the
    client's pool disconnects it like any connection in use, and the next use connects again."""

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


def send_all(
    conn: Any, commands: Sequence[Wire], meanwhile: Callable[[], Any], kept: KeptConnection | None = None
) -> list[Any]:
    """Send every command on one pooled connection (or on ``kept``'s), run ``meanwhile()`` (the caller's own work)
    once all are sent, then read the replies in order. An error reply is returned as its redis-py exception, not
    raised. A connection that fails ends the list with that exception: the replies before it are known, the
    commands after it unknown. Each command is packed by hiredis directly: redis-py's packer looks at every
    argument in Python first."""
    pool = conn.connection_pool
    try:
        connection = pool.get_connection() if kept is None else kept.get()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return [exc]
    replies: list[Any] = []
    read_all = False
    try:
        for command in commands:
            connection.send_packed_command((pack_command(command),))
        meanwhile()
        for _command in commands:
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
    return replies


async def send_all_async(conn: Any, commands: Sequence[Wire], meanwhile: Callable[[], Any]) -> list[Any]:
    """``send_all`` on an asyncio client."""
    pool = conn.connection_pool
    try:
        connection = await pool.get_connection()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        return [exc]
    replies: list[Any] = []
    try:
        for command in commands:
            await connection.send_packed_command((pack_command(command),))
        meanwhile()
        for _command in commands:
            try:
                replies.append(await connection.read_response())
            except redis.ResponseError as exc:
                replies.append(exc)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        await connection.disconnect()
        return [*replies, exc]
    finally:
        await pool.release(connection)
    return replies
