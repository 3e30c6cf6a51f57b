"""The asyncio broker's kept connection (queues/engine/broker/kept_async.py): calls on it apply as on the pool's road
(error replies and the script cache's recovery included), and a connection the server closed, or one whose call
was cut short before its reply, is never read from again: the next call gets its own reply."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
import redis.asyncio

from taskq.queues.engine import TaskMessage, TaskNotFoundError
from taskq.queues.engine.broker import AsyncBroker
from taskq.queues.engine.broker.kept_async import AsyncKeptConnection
from taskq.queues.engine.transitions import Placement

Q = "default"


def on_kept(redis_url: str, body: Callable[[AsyncBroker, AsyncKeptConnection], Awaitable[Any]], **client: Any) -> Any:
    """Run ``body`` with a broker on the test database (its client made with ``client``'s options, when given)
    and one kept connection of it, then close the broker."""

    async def scenario() -> Any:
        conn = redis.asyncio.Redis.from_url(redis_url, **client) if client else None
        broker = AsyncBroker(redis_url, conn=conn)
        kept = broker.keep_connection()
        assert kept is not None
        try:
            return await body(broker, kept)
        finally:
            await broker.close()

    return asyncio.run(scenario())


def test_calls_on_a_kept_connection_apply_and_an_error_reply_leaves_it_usable(redis_url: str, r: redis.Redis):
    async def body(broker: AsyncBroker, kept: AsyncKeptConnection) -> None:
        placement = Placement(TaskMessage("t1", "email", b"{}", Q))
        await broker.run(broker.transitions.enqueue(Q, [placement]), kept=kept)
        with pytest.raises(TaskNotFoundError):  # the script's error reply, translated as on the pool's road
            await broker.run(broker.transitions.delete_task(Q, "missing", "test"), kept=kept)
        r.script_flush()  # the next call meets NOSCRIPT and loads the script again
        placement = Placement(TaskMessage("t2", "email", b"{}", Q))
        await broker.run(broker.transitions.enqueue(Q, [placement]), kept=kept)

    on_kept(redis_url, body)
    assert sorted(r.lrange(f"tq:{{{Q}}}:pending", 0, -1)) == [b"t1", b"t2"]


def test_a_kept_connection_the_server_closed_is_connected_again_before_the_next_call(redis_url: str, r: redis.Redis):
    async def body(broker: AsyncBroker, kept: AsyncKeptConnection) -> tuple[int, int]:
        first = int(await kept.execute(("CLIENT", "ID")))
        r.client_kill_filter(_id=str(first))
        while any(int(c["id"]) == first for c in r.client_list()):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the loop reads the close (EOF) from the socket
        return first, int(await kept.execute(("CLIENT", "ID")))

    first, second = on_kept(redis_url, body)
    assert second != first


def test_a_call_cut_short_before_its_reply_leaves_no_reply_for_the_next_call(redis_url: str, r: redis.Redis):
    async def body(broker: AsyncBroker, kept: AsyncKeptConnection) -> tuple[Any, Any]:
        r.rpush("other", b"x")
        waiting = asyncio.create_task(kept.execute(("BLPOP", "empty", 0.5)))  # a nil reply comes 0.5 s later
        while not any(c.get("cmd") == "blpop" for c in r.client_list()):
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return await kept.execute(("LPOP", "other"))

    assert on_kept(redis_url, body) == b"x"


def test_a_call_past_the_clients_socket_timeout_fails_and_the_next_call_gets_its_own_reply(
    redis_url: str, r: redis.Redis
):
    async def body(broker: AsyncBroker, kept: AsyncKeptConnection) -> Any:
        r.rpush("other", b"x")
        with pytest.raises(redis.TimeoutError, match="no reply from Redis within 0.3 s"):
            await kept.execute(("BLPOP", "empty", 1))  # its nil reply would come after the timeout
        return await kept.execute(("LPOP", "other"))

    assert on_kept(redis_url, body, socket_timeout=0.3) == b"x"
