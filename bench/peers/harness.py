"""The workloads, written once for every peer. A peer module builds a ``Peer`` and calls ``main(peer)``.

    <peers venv>/bin/python -m bench.peers.<peer> enqueue|bulk|memory|process|latency [options]

Run from the repository root. Each command prints one JSON document on its last line.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from ..common import REPO, bench_url, connect, emit, flush, keys_memory, rate, used_memory
from ..measure import drain, idle_pickup, repeated, start_logged, timed, timed_with_cpu
from ..work import KINDS

QUEUE = "bench"


@dataclass
class Peer:
    name: str
    version: str
    enqueue_noop: Callable[[], Any]
    enqueue_stamp: Callable[[int], Any]  # the stamp task RPUSHes "<seq> <time.time()>" to LATENCY_LIST
    worker_cmd: Callable[[int], list[str]]  # concurrency -> argv of ONE worker process
    remaining: Callable[[redis.Redis], int]  # tasks not yet taken and acked/finished
    enqueue_work: Callable[[str], Any]  # a task running bench/work.py's workload of that kind
    bulk: Callable[[int], Any] | None = None  # enqueue n no-op tasks in one call of the library's bulk API
    # enqueue n no-op tasks one by one, each awaited, in one call: asyncio peers run all n on one event loop run
    # (so the figure is the library's, not a loop start per task); None: ``enqueue_noop`` n times
    enqueue_noops: Callable[[int], Any] | None = None
    # pre-fill n work tasks of a kind in one call (untimed), where a task per call would be slow (BullMQ runs in
    # Node); None: ``enqueue_work`` n times
    prefill_work: Callable[[str, int], Any] | None = None
    # one-by-one enqueue of n no-op tasks timed by the library's side itself, in seconds (BullMQ: inside Node, so
    # that Node's start-up is not in the figure); None: the harness times it
    timed_enqueue: Callable[[int], float] | None = None
    concurrency_note: str = ""
    fixed_concurrency: int | None = None  # a worker that runs one task at a time whatever we ask
    notes: list[str] = field(default_factory=list)

    def row(self, workload: str, **figures: Any) -> dict[str, Any]:
        """One result of this peer: library, version and workload first, then the figures."""
        return {"lib": self.name, "version": self.version, "workload": workload, **figures}

    def prefill(self, n: int) -> None:
        if self.bulk is not None:
            for first in range(0, n, 1000):
                self.bulk(min(1000, n - first))
        elif self.enqueue_noops is not None:
            self.enqueue_noops(n)
        elif self.prefill_work is not None:
            self.prefill_work("noop", n)
        else:
            for _ in range(n):
                self.enqueue_noop()


def tasks(noop: Callable[[], Any], stamp: Callable[[int], Any], work: Callable[[str], Any]) -> dict[str, Any]:
    """A peer's three enqueue functions, as ``Peer`` fields: a no-op task, the latency stamp (takes the sample's
    sequence number) and the work task (takes the kind of bench/work.py)."""
    return {"enqueue_noop": noop, "enqueue_stamp": stamp, "enqueue_work": work}


def python_m(command: str) -> Callable[[int], list[str]]:
    """A ``worker_cmd`` that runs ``python -m <command>`` under this interpreter, with ``{n}`` in the command
    standing for the concurrency and ``{queue}`` for the benchmark's queue."""
    return lambda n: [sys.executable, "-m", *command.format(n=n, queue=QUEUE).split()]


def enqueue(peer: Peer, n: int) -> dict[str, Any]:
    conn = connect()
    if peer.timed_enqueue is not None:  # timed inside the peer's own runtime (BullMQ): no client CPU to read here
        flush(conn)
        elapsed, cpu = peer.timed_enqueue(n), None
    elif peer.enqueue_noops is not None:
        add = peer.enqueue_noops
        elapsed, cpu = timed_with_cpu(conn, lambda: add(500), lambda: add(n))
    else:
        elapsed, cpu = timed_with_cpu(conn, repeated(peer.enqueue_noop, 500), repeated(peer.enqueue_noop, n))
    left = peer.remaining(conn)
    flush(conn)
    assert left == n, f"{left} tasks in the queue after enqueuing {n}"
    cpu_us = None if cpu is None else round(cpu / n * 1e6, 1)
    return peer.row("enqueue", **rate(n, elapsed, per_task=True), client_cpu_us_per_task=cpu_us)


def bulk(peer: Peer, n: int, batch: int) -> dict[str, Any]:
    if peer.bulk is None:
        return peer.row(f"bulk{batch}", unsupported=True)
    add = peer.bulk
    conn = connect()
    elapsed = timed(conn, lambda: add(min(batch, 1000)), repeated(lambda: add(batch), n // batch))
    done = n // batch * batch
    left = peer.remaining(conn)
    flush(conn)
    assert left == done, f"{left} tasks in the queue after enqueuing {done}"
    return peer.row(f"bulk{batch}", batch=batch, **rate(done, elapsed))


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
    return peer.row(
        "memory",
        tasks=n,
        used_memory_delta=total,
        bytes_per_task=round(total / n, 1),
        keys_bytes_per_task=round(sum(families.values()) / n, 1),
        key_families=dict(sorted(families.items(), key=lambda kv: -kv[1])[:8]),
    )


def start_worker(peer: Peer, concurrency: int) -> subprocess.Popen:
    """Start ONE worker process of ``peer``. ``BENCH_CONCURRENCY`` in its environment is ``concurrency``, for the
    libraries whose worker reads its concurrency from the module it imports (SAQ's settings, streaq's Worker)."""
    cmd = peer.worker_cmd(concurrency)
    return start_logged(
        cmd,
        f"{peer.name.lower()}-bench-worker.log",
        BENCH_REDIS_URL=bench_url(),
        PYTHONPATH=str(REPO),
        BENCH_CONCURRENCY=str(concurrency),
    )


def peer_stop_signal(peer: Peer) -> int:
    return signal.SIGINT if peer.name == "Huey" else signal.SIGTERM


def process(peer: Peer, n: int, concurrency: int, work: str | None = None) -> dict[str, Any]:
    """Drain ``n`` pre-filled no-op tasks, or with ``work`` tasks running that workload of bench/work.py."""
    conn = connect()
    flush(conn)
    if work is None:
        peer.prefill(n)
    elif peer.prefill_work is not None:
        peer.prefill_work(work, n)
    else:
        for _ in range(n):
            peer.enqueue_work(work)
    total = peer.remaining(conn)
    worker = start_worker(peer, concurrency)
    result = drain(conn, worker, lambda: peer.remaining(conn), total, peer_stop_signal(peer), start_timeout=120)
    flush(conn)
    return peer.row(
        "process" + (f"_{work}" if work else ""),
        concurrency=peer.fixed_concurrency or concurrency,
        concurrency_note=peer.concurrency_note,
        **result,
    )


def latency(peer: Peer, samples: int, concurrency: int) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    result = idle_pickup(conn, start_worker(peer, concurrency), peer.enqueue_stamp, samples, peer_stop_signal(peer))
    flush(conn)
    return peer.row("latency", concurrency=peer.fixed_concurrency or concurrency, **result)


def main(peer: Peer) -> None:
    parser = argparse.ArgumentParser(description=f"{peer.name} benchmarks (see bench/README.md)")
    parser.add_argument("workload", choices=["enqueue", "bulk", "memory", "process", "latency"])
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--samples", type=int, default=250)
    parser.add_argument("--work", choices=KINDS, default=None, help="process: the handlers' work (bench/work.py)")
    a = parser.parse_args()
    if a.workload == "enqueue":
        emit(enqueue(peer, a.n or 20_000))
    elif a.workload == "bulk":
        emit(bulk(peer, a.n or 100_000, a.batch))
    elif a.workload == "memory":
        emit(memory(peer, a.n or 100_000))
    elif a.workload == "process":
        emit(process(peer, a.n or 20_000, a.concurrency, a.work))
    else:
        emit(latency(peer, a.samples, a.concurrency))


def python_bin() -> str:
    return sys.executable
