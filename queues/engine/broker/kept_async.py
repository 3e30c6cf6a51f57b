"""A connection that one caller on an event loop keeps (``AsyncBroker.keep_connection``), for a caller that sends
one script call at a time, many times a second: the asyncio pool's ack writer and its fetch loop.

redis.asyncio's road for one command (``execute_command``) checks a connection out of the pool and back, each
under the pool's lock and with its observability hooks, and runs the call under the client's retry policy; with a
socket timeout set, it also times the send and the read apart (``asyncio.wait_for`` on the send makes a task of
its own). On this machine that road cost 2-2.7 times the CPU of the send and the read themselves for an EVALSHA
(docs/benchmarks.md, "Third pass: the asyncio pool's own cost"). A kept connection is made once from the client's
pool settings, with no socket timeout of its own: each call is sent and read under one timer of the client's socket
timeout. Before each call, a connection the server closed, or one with data left unread, is connected again, as the
pool checks a connection it hands out. A connection that fails in a call is dropped (the next call connects
again), and the error is redis-py's own, translated by the broker as on its other road. It is not retried: the
caller decides (the ack writer leaves what was not written to the syncer).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio
from hiredis import pack_command

from .scripting import Wire


class AsyncKeptConnection:
    """One connection, kept by one task of one loop that never sends two calls on it at once."""

    def __init__(self, conn: redis.asyncio.Redis) -> None:
        self._pool = conn.connection_pool
        self._timeout: float | None = self._pool.connection_kwargs.get("socket_timeout")
        self._connection: Any = None

    async def _ready(self) -> Any:
        connection = self._connection
        if connection is None:
            connection = self._connection = self._pool.make_connection()  # type: ignore[no-untyped-call]
            connection.socket_timeout = None  # the call's one timer (``execute``) stands for it
        if not connection.is_connected:
            await connection.connect()
        elif await self._stale(connection):
            await connection.disconnect()
            await connection.connect()
        return connection

    @staticmethod
    async def _stale(connection: Any) -> bool:
        """Closed by the server, or with a reply left unread: not safe to send on. redis-py 8 asks ``can_read``
        (``can_read_destructive`` is deprecated there); 6.0, the oldest supported, has only the latter, whose
        destructive read costs nothing here: a connection with data left is dropped."""
        can_read = getattr(connection, "can_read", None) or connection.can_read_destructive
        try:
            return bool(await can_read())
        except (redis.ConnectionError, OSError):
            return True

    async def execute(self, command: Wire) -> Any:
        """Send ``command`` and read its reply; an error reply is raised as redis-py's ``ResponseError``."""
        connection = await self._ready()
        try:
            async with asyncio.timeout(self._timeout):
                await connection.send_packed_command((pack_command(command),), check_health=False)
                return await connection.read_response()
        except redis.ResponseError:
            raise  # the reply was read whole: the connection is fine
        except TimeoutError:
            await connection.disconnect()
            raise redis.TimeoutError(f"no reply from Redis within {self._timeout} s") from None
        except BaseException:  # a broken connection, or a cancel between the send and the reply
            await connection.disconnect()
            raise

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.disconnect()
