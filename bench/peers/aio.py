"""The producer side of the asyncio peers (taskiq, streaq, SAQ) under the synchronous harness: one event loop for
the producing process, run once per harness call. ``repeat`` makes n awaited calls in ONE run of the loop, so that
one-by-one enqueue measures the library's enqueue, not a loop start per task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

_loop = asyncio.new_event_loop()


def call(coro: Coroutine[Any, Any, Any]) -> Any:
    return _loop.run_until_complete(coro)


def once(start: Callable[[], Coroutine[Any, Any, Any]]) -> Callable[[], None]:
    """A function that runs ``start()`` on the loop the first time it is called and does nothing after: a
    producer's start-up (its connection, its scripts), before its first enqueue."""
    started = False

    def ready() -> None:
        nonlocal started
        if not started:
            call(start())
            started = True

    return ready


def repeat(make: Callable[[], Awaitable[Any]], n: int) -> None:
    """Await ``make()`` n times, one after the other (each enqueue awaited before the next, as a producer that
    wants to know its task is in would do)."""

    async def run() -> None:
        for _ in range(n):
            await make()

    call(run())


def stream_backlog(conn: Any, stream: str, group: str) -> int:
    """Entries of a Redis stream not yet acknowledged by a consumer group: those not delivered yet (the group's
    lag) plus those delivered and pending. 0 when the stream or group does not exist yet."""
    try:
        groups = conn.xinfo_groups(stream)
    except Exception:  # no such stream yet
        return 0
    for info in groups:
        name = info["name"].decode() if isinstance(info["name"], bytes) else info["name"]
        if name == group:
            lag = info.get("lag")
            if lag is None:  # Redis cannot tell (entries deleted); count from the stream's length
                lag = max(0, int(conn.xlen(stream)) - int(info.get("entries-read") or 0))
            return int(lag) + int(info["pending"])
    return int(conn.xlen(stream))
