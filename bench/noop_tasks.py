"""Handlers for the taskq worker benchmarks: ``manage.py taskworker --import bench.noop_tasks``.

``bench:noop`` / ``bench:anoop`` do nothing (sync and async). ``bench:stamp`` / ``bench:astamp`` note when they
started: they RPUSH ``"<payload> <time.time()>"`` to ``bench:latency`` in the worker's Redis database (the
payload is the sample's sequence number), which the latency benchmark compares with the enqueue time.
``bench:work`` / ``bench:awork`` run the workload named by their payload (``bench/work.py``: noop, incr, sleep,
cpu), as the peers' work tasks do.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import redis
import redis.asyncio

from taskq.queues.engine import handler

from . import work
from .common import LATENCY_LIST

_local = threading.local()
_aconns: dict[int, redis.asyncio.Redis] = {}  # one per event loop: an asyncio connection is bound to its loop


def _url() -> str:
    return os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/4")


@handler("bench:noop")
def noop(task) -> None:
    pass


@handler("bench:anoop")
async def anoop(task) -> None:
    pass


@handler("bench:stamp")
def stamp(task) -> None:
    started = time.time()
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = redis.Redis.from_url(_url())
    conn.rpush(LATENCY_LIST, f"{task.payload.decode()} {started!r}")


@handler("bench:astamp")
async def astamp(task) -> None:
    started = time.time()
    loop = id(asyncio.get_running_loop())
    conn = _aconns.get(loop)
    if conn is None:
        conn = _aconns[loop] = redis.asyncio.Redis.from_url(_url())
    await conn.rpush(LATENCY_LIST, f"{task.payload.decode()} {started!r}")


@handler("bench:work")
def run_work(task) -> None:
    work.run(task.payload.decode())


@handler("bench:awork")
async def run_awork(task) -> None:
    await work.run_async(task.payload.decode())
