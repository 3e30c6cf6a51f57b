"""The workloads, written once for every peer. A peer module builds a ``Peer`` and calls ``main(peer)``.

    <peers venv>/bin/python -m bench.peers.<peer> enqueue|bulk|memory|process|latency [options]

Run from the repository root. Each command prints one JSON document on its last line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from ..common import (
    LATENCY_LIST,
    REPO,
    bench_url,
    connect,
    emit,
    flush,
    keys_memory,
    measure_pickup,
    rate,
    redis_pid,
    stop,
    used_memory,
    wait_drained,
)

QUEUE = "bench"


@dataclass
class Peer:
    name: str
    version: str
    enqueue_noop: Callable[[], Any]
    enqueue_stamp: Callable[[int], Any]  # the stamp task RPUSHes "<seq> <time.time()>" to LATENCY_LIST
    worker_cmd: Callable[[int], list[str]]  # concurrency -> argv of ONE worker process
    remaining: Callable[[redis.Redis], int]  # tasks not yet taken and acked/finished
    bulk: Callable[[int], Any] | None = None  # enqueue n no-op tasks in one call of the library's bulk API
    concurrency_note: str = ""
    fixed_concurrency: int | None = None  # a worker that runs one task at a time whatever we ask
    notes: list[str] = field(default_factory=list)

    def prefill(self, n: int) -> None:
        if self.bulk is not None:
            for _ in range(n // 1000):
                self.bulk(1000)
        else:
            for _ in range(n):
                self.enqueue_noop()


def enqueue(peer: Peer, n: int) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    for _ in range(500):
        peer.enqueue_noop()
    flush(conn)
    t = time.perf_counter()
    for _ in range(n):
        peer.enqueue_noop()
    elapsed = time.perf_counter() - t
    left = peer.remaining(conn)
    flush(conn)
    assert left == n, f"{left} tasks in the queue after enqueuing {n}"
    return {
        "lib": peer.name,
        "version": peer.version,
        "workload": "enqueue",
        **rate(n, elapsed, per_task=True),
    }


def bulk(peer: Peer, n: int, batch: int) -> dict[str, Any]:
    if peer.bulk is None:
        return {"lib": peer.name, "version": peer.version, "workload": f"bulk{batch}", "unsupported": True}
    conn = connect()
    flush(conn)
    peer.bulk(min(batch, 1000))
    flush(conn)
    t = time.perf_counter()
    for _ in range(n // batch):
        peer.bulk(batch)
    elapsed = time.perf_counter() - t
    done = n // batch * batch
    left = peer.remaining(conn)
    flush(conn)
    assert left == done, f"{left} tasks in the queue after enqueuing {done}"
    return {
        "lib": peer.name,
        "version": peer.version,
        "workload": f"bulk{batch}",
        "batch": batch,
        **rate(done, elapsed),
    }


def memory(peer: Peer, n: int) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    peer.enqueue_noop()  # create the queue's own keys first, so that the delta is per task
    before = used_memory(conn)
    peer.prefill(n)
    time.sleep(0.5)
    after = used_memory(conn)
    families = keys_memory(conn)
    flush(conn)
    total = after - before
    return {
        "lib": peer.name,
        "version": peer.version,
        "workload": "memory",
        "tasks": n,
        "used_memory_delta": total,
        "bytes_per_task": round(total / n, 1),
        "keys_bytes_per_task": round(sum(families.values()) / n, 1),
        "key_families": dict(sorted(families.items(), key=lambda kv: -kv[1])[:8]),
    }


def start_worker(peer: Peer, concurrency: int) -> subprocess.Popen:
    env = dict(os.environ, BENCH_REDIS_URL=bench_url(), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    log = open(Path(os.environ.get("BENCH_LOG_DIR", "/tmp")) / f"{peer.name.lower()}-bench-worker.log", "ab")
    cmd = peer.worker_cmd(concurrency)
    log.write(("\n$ " + " ".join(cmd) + "\n").encode())
    log.flush()
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def process(peer: Peer, n: int, concurrency: int) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    peer.prefill(n)
    total = peer.remaining(conn)
    worker = start_worker(peer, concurrency)
    rpid = redis_pid(conn)
    try:
        result = wait_drained(
            lambda: peer.remaining(conn),
            total,
            pids=tuple(p for p in (worker.pid, rpid) if p),
            start_timeout=120,
            worker=worker,
        )
    finally:
        stop(worker, sig_first=peer_stop_signal(peer))
    flush(conn)
    result["cpu_cores"] = {"worker": result["cpu_cores"].get(worker.pid), "redis": result["cpu_cores"].get(rpid)}
    return {
        "lib": peer.name,
        "version": peer.version,
        "workload": "process",
        "concurrency": peer.fixed_concurrency or concurrency,
        "concurrency_note": peer.concurrency_note,
        **result,
    }


def peer_stop_signal(peer: Peer) -> int:
    import signal

    return signal.SIGINT if peer.name == "Huey" else signal.SIGTERM


def latency(peer: Peer, samples: int, concurrency: int) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    worker = start_worker(peer, concurrency)
    try:
        peer.enqueue_stamp(-1)
        if conn.blpop([LATENCY_LIST], timeout=120) is None:
            raise TimeoutError(f"{peer.name}'s worker ran no task within 120 s")
        time.sleep(1.0)
        result = measure_pickup(conn, peer.enqueue_stamp, samples)
    finally:
        stop(worker, sig_first=peer_stop_signal(peer))
    flush(conn)
    return {
        "lib": peer.name,
        "version": peer.version,
        "workload": "latency",
        "concurrency": peer.fixed_concurrency or concurrency,
        **result,
    }


def main(peer: Peer) -> None:
    parser = argparse.ArgumentParser(description=f"{peer.name} benchmarks (see bench/README.md)")
    parser.add_argument("workload", choices=["enqueue", "bulk", "memory", "process", "latency"])
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--samples", type=int, default=250)
    a = parser.parse_args()
    if a.workload == "enqueue":
        emit(enqueue(peer, a.n or 20_000))
    elif a.workload == "bulk":
        emit(bulk(peer, a.n or 100_000, a.batch))
    elif a.workload == "memory":
        emit(memory(peer, a.n or 100_000))
    elif a.workload == "process":
        emit(process(peer, a.n or 20_000, a.concurrency))
    else:
        emit(latency(peer, a.samples, a.concurrency))


def python_bin() -> str:
    return sys.executable
