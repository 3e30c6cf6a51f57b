"""The latency handler's body, shared by the peers: RPUSH "<seq> <time.time()>" as the task's first act."""

from __future__ import annotations

import threading
import time

import redis

from ..common import LATENCY_LIST, bench_url

_local = threading.local()


def record(seq: int) -> None:
    started = time.time()
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = redis.Redis.from_url(bench_url())
    conn.rpush(LATENCY_LIST, f"{seq} {started!r}")
