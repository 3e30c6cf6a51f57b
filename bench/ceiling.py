"""The CPython ceiling of a handler: what one process reaches doing nothing but the handler's own work, at a given
concurrency, with no queue at all. A worker can only add cost to it, so a worker's throughput divided by this figure
(measured in the same minutes) is the share of the machine's reach that the worker keeps.

    .venv/bin/python -m bench.ceiling -n 20000 --concurrency 64 [--async] [--work incr|noop|sleep|cpu]

Sync: ``--concurrency`` threads in this process, each calling ``bench.work.run(kind)`` (the very function that
taskq's ``bench:work`` handler and every peer's work task call; for ``incr`` one INCR through the module's one
shared redis-py client). Async: that many asyncio tasks on one event loop, each awaiting
``bench.work.run_async(kind)`` (redis.asyncio). ``-n`` calls in all, split evenly; each thread or task first makes
a few untimed calls (its connection, the pool), then all start together. Prints one JSON document on its last line,
with the CPU this process and redis-server used over the timed part.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from typing import Any

from .common import connect, cpu_seconds, emit, flush, per_task, rate, redis_pid
from .work import COUNTER, KINDS, run, run_async

WARM_UP_CALLS = 5  # per thread or task, untimed: each opens its connection before the clock starts


def sync_ceiling(kind: str, calls_each: int, concurrency: int) -> float:
    """Seconds for ``concurrency`` threads to make ``calls_each`` calls of the sync handler each."""
    start = threading.Barrier(concurrency + 1)

    def loop() -> None:
        for _ in range(WARM_UP_CALLS):
            run(kind)
        start.wait()
        for _ in range(calls_each):
            run(kind)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    start.wait()  # every thread is warm; the clock starts as they are released
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - t0


async def async_ceiling(kind: str, calls_each: int, concurrency: int) -> float:
    """Seconds for ``concurrency`` asyncio tasks on this loop to make ``calls_each`` awaited calls each."""
    go = asyncio.Event()
    ready = 0

    async def loop() -> None:
        nonlocal ready
        for _ in range(WARM_UP_CALLS):
            await run_async(kind)
        ready += 1
        await go.wait()
        for _ in range(calls_each):
            await run_async(kind)

    tasks = [asyncio.create_task(loop()) for _ in range(concurrency)]
    while ready < concurrency:
        await asyncio.sleep(0.001)
    t0 = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    return time.perf_counter() - t0


def measure(n: int, concurrency: int, use_async: bool, kind: str) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    calls_each = max(1, n // concurrency)
    total = calls_each * concurrency
    rpid = redis_pid(conn)
    me = os.getpid()
    cpu0 = {pid: cpu_seconds(pid) for pid in (me, rpid) if pid}
    # The warm-up calls fall inside the CPU window but not the clock; they are WARM_UP_CALLS per thread, under 2 %
    # of the calls at the default sizes, so the cores figures are read as rough.
    if use_async:
        elapsed = asyncio.run(async_ceiling(kind, calls_each, concurrency))
    else:
        elapsed = sync_ceiling(kind, calls_each, concurrency)
    spent = {pid: cpu_seconds(pid) - cpu0[pid] for pid in cpu0}
    cores = {pid: round(s / elapsed, 2) for pid, s in spent.items()}
    per = per_task(spent, total)
    if kind == "incr":
        counted = int(conn.get(COUNTER) or 0)
        expected = total + WARM_UP_CALLS * concurrency
        assert counted == expected, f"the counter says {counted} INCRs, {expected} were made"
    flush(conn)
    return {
        "lib": "ceiling",
        "workload": ("ceiling_async" if use_async else "ceiling") + f"_{kind}",
        "concurrency": concurrency,
        "how": f"{concurrency} asyncio tasks on one loop" if use_async else f"{concurrency} threads, one process",
        **rate(total, elapsed),
        "cpu_cores": {"worker": cores.get(me), "redis": cores.get(rpid) if rpid else None},
        "worker_cpu_us_per_task": per.get(me),
        "redis_cpu_us_per_task": per.get(rpid) if rpid else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=20_000, help="handler calls in all (default 20,000)")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--async", dest="use_async", action="store_true", help="asyncio tasks and the async handler")
    parser.add_argument("--work", choices=KINDS, default="incr", help="the handler's work (bench/work.py)")
    a = parser.parse_args()
    emit(measure(a.n, a.concurrency, a.use_async, a.work))


if __name__ == "__main__":
    main()
