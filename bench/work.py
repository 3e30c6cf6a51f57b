"""The handler bodies of the processing workloads, written once and run by taskq and every peer alike (stdlib and
redis-py only, so the peers' venv imports it too). The task's one argument names the kind:

| kind | what the handler does | workload |
|---|---|---|
| ``noop`` | nothing | W1 |
| ``incr`` | one Redis round trip: ``INCR`` on a module-level redis-py client (one connection pool per process) | W2 |
| ``sleep`` | ``time.sleep(0.01)``: 10 ms of blocking I/O | W3 |
| ``cpu`` | about 4 ms of pure Python on this machine kind (a fixed amount of work, the same for everyone) | W4 |

``run_async`` is the same for async handlers (``incr`` on redis.asyncio, one client per event loop; ``sleep`` as
``asyncio.sleep``).
"""

from __future__ import annotations

import asyncio
import time

import redis
import redis.asyncio

from .common import bench_url

KINDS = ("noop", "incr", "sleep", "cpu")
COUNTER = "bench:work:incr"
CPU_ROUNDS = 100_000  # ~4 ms of CPython 3.11 on this machine kind

_client: redis.Redis | None = None
_async_clients: dict[int, redis.asyncio.Redis] = {}  # an asyncio connection is bound to its event loop


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(bench_url(), max_connections=1000)
    return _client


def burn() -> int:
    total = 0
    for i in range(CPU_ROUNDS):
        total += i * i % 7
    return total


def run(kind: str) -> None:
    if kind == "incr":
        _redis().incr(COUNTER)
    elif kind == "sleep":
        time.sleep(0.01)
    elif kind == "cpu":
        burn()
    elif kind != "noop":
        raise ValueError(f"unknown work kind {kind!r}")


async def run_async(kind: str) -> None:
    if kind == "incr":
        loop = id(asyncio.get_running_loop())
        client = _async_clients.get(loop)
        if client is None:
            client = _async_clients[loop] = redis.asyncio.Redis.from_url(bench_url(), max_connections=1000)
        await client.incr(COUNTER)
    elif kind == "sleep":
        await asyncio.sleep(0.01)
    elif kind == "cpu":
        burn()
    elif kind != "noop":
        raise ValueError(f"unknown work kind {kind!r}")
