"""taskq's benchmarks. Run from the repository root with the project's venv:

    .venv/bin/python -m bench.taskq_bench enqueue            # one by one
    .venv/bin/python -m bench.taskq_bench bulk --batch 1000  # enqueue_many
    .venv/bin/python -m bench.taskq_bench memory
    .venv/bin/python -m bench.taskq_bench process --concurrency 10 [--async] [--work noop|incr|sleep|cpu]
        [--tracing off|sdk]
    .venv/bin/python -m bench.taskq_bench latency [--async]

Each prints one JSON document on its last line. Everything uses BENCH_REDIS_URL (default DB 4), flushed first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from typing import Any

from taskq import Client, Keys, Limits

from .common import bench_url, connect, emit, flush, keys_memory, rate, used_memory
from .measure import drain, idle_pickup, repeated, start_logged, timed, timed_with_cpu
from .work import KINDS

# The context the tasks of ``--tracing sdk`` carry (bench/tracing_sdk.py, which the worker imports; not imported
# here, so that a run without tracing needs no SDK).
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

QUEUE = "bench"


def enqueue_one_by_one(n: int, threads: int = 1) -> dict[str, Any]:
    """``threads`` > 1: that many threads share one Client (thread-safe, one connection each from its pool),
    each calling enqueue one task at a time."""
    conn = connect()
    client = Client(bench_url())

    def noop() -> None:
        client.enqueue("bench:noop", b"", queue=QUEUE)

    per_thread = repeated(noop, n // threads)

    def run() -> None:
        pool = [threading.Thread(target=per_thread) for _ in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()

    # the warm-up: connection, script cache, queue registration
    elapsed, cpu = timed_with_cpu(conn, repeated(noop, 500), per_thread if threads == 1 else run)
    n = n // threads * threads
    left = conn.llen(Keys().queue(QUEUE).pending)
    assert left == n, f"{left} tasks pending after enqueuing {n}"
    flush(conn)
    return {
        "lib": "taskq",
        "workload": "enqueue" if threads == 1 else f"enqueue_{threads}threads",
        "threads": threads,
        **rate(n, elapsed, per_task=True),
        "client_cpu_us_per_task": round(cpu / n * 1e6, 1),
    }


def enqueue_bulk(n: int, batch: int) -> dict[str, Any]:
    conn = connect()
    client = Client(bench_url())
    items = [("bench:noop", b"")] * batch
    elapsed = timed(
        conn,
        lambda: client.enqueue_many([("bench:noop", b"")] * 1000, queue=QUEUE),
        repeated(lambda: client.enqueue_many(items, queue=QUEUE), n // batch),
    )
    done = n // batch * batch
    assert conn.llen(Keys().queue(QUEUE).pending) == done
    flush(conn)
    return {
        "lib": "taskq",
        "workload": f"bulk{batch}",
        "batch": batch,
        **rate(done, elapsed),
    }


def prefill(client: Client, task_type: str, payload: bytes, n: int, headers: dict[str, str] | None = None) -> None:
    """Enqueue ``n`` tasks in lists of 1,000 (the last one shorter), each with ``headers``."""
    for first in range(0, n, 1000):
        client.enqueue_many([(task_type, payload)] * min(1000, n - first), queue=QUEUE, headers=headers)


def memory(n: int, event_maxlen: int) -> dict[str, Any]:
    """Bytes per pending no-op task: used_memory delta / N, with the event stream (capped at event_maxlen) in,
    and per key family from MEMORY USAGE, so the stream's share and the per-task figure show separately."""
    conn = connect()
    flush(conn)
    client = Client(bench_url(), limits=Limits(event_maxlen=event_maxlen))
    before = used_memory(conn)
    prefill(client, "bench:noop", b"", n)
    time.sleep(0.5)
    after = used_memory(conn)
    q = Keys().queue(QUEUE)
    families = keys_memory(conn)
    stream = families.get(q.events, 0)
    stream_len = conn.xlen(q.events)
    flush(conn)
    total = after - before
    return {
        "lib": "taskq",
        "workload": "memory",
        "tasks": n,
        "event_maxlen": event_maxlen,
        "stream_entries": stream_len,
        "used_memory_delta": total,
        "bytes_per_task": round(total / n, 1),
        "stream_bytes": stream,
        "bytes_per_task_without_stream": round((total - stream) / n, 1),
        "keys_bytes_per_task": round(sum(families.values()) / n, 1),
        "keys_bytes_per_task_without_stream": round((sum(families.values()) - stream) / n, 1),
        "key_families": dict(sorted(families.items(), key=lambda kv: -kv[1])[:8]),
    }


def start_worker(concurrency: int, extra: list[str], use_async: bool = False) -> subprocess.Popen:
    """``--async`` runs the async handlers on the asyncio pool (fetch, run and ack on one event loop), unless the
    worker arguments name another pool (``--worker-arg=--pool --worker-arg=thread``: the thread pool's loop)."""
    if use_async and "--pool" not in extra:
        extra = ["--pool", "asyncio", *extra]
    cmd = [
        sys.executable,
        "manage.py",
        "taskworker",
        "--queues",
        QUEUE,
        "--concurrency",
        str(concurrency),
        "--import",
        "bench.noop_tasks",
        "--skip-checks",
        *extra,
    ]
    return start_logged(cmd, "taskq-bench-worker.log", REDIS_URL=bench_url())


def process(
    n: int,
    concurrency: int,
    use_async: bool,
    extra: list[str],
    work: str | None = None,
    count_from: int = 0,
    tracing: str = "off",
) -> dict[str, Any]:
    """Drain ``n`` pre-filled tasks: no-op ones, or with ``work`` the workload of ``bench/work.py`` it names. The
    clock starts at the first completion, or at the ``count_from``-th (see ``measure.wait_drained``). With
    ``tracing="sdk"`` the worker runs with an OpenTelemetry SDK (bench/tracing_sdk.py) and every task carries a
    producer's trace context, so each attempt makes its span."""
    headers = None
    if tracing == "sdk":
        extra = [*extra, "--import", "bench.tracing_sdk"]
        headers = {"traceparent": TRACEPARENT}
    conn = connect()
    flush(conn)
    client = Client(bench_url())
    if work is None:
        task_type, payload = ("bench:anoop" if use_async else "bench:noop"), b""
    else:
        task_type, payload = ("bench:awork" if use_async else "bench:work"), work.encode()
    prefill(client, task_type, payload, n, headers)
    q = Keys().queue(QUEUE)
    total = n

    def remaining() -> int:
        pipe = conn.pipeline(transaction=False)
        pipe.llen(q.pending)
        pipe.zcard(q.lease)
        return sum(pipe.execute())

    result = drain(conn, start_worker(concurrency, extra, use_async), remaining, total, count_from=count_from)
    processed = int(conn.get(q.processed) or 0)
    flush(conn)
    return {
        "lib": "taskq",
        "workload": ("process_async" if use_async else "process") + (f"_{work}" if work else ""),
        "concurrency": concurrency,
        "worker_args": extra,
        "tracing": tracing,
        "processed_counter": processed,
        "count_from": count_from,
        **result,
    }


def latency(samples: int, concurrency: int, use_async: bool, extra: list[str]) -> dict[str, Any]:
    conn = connect()
    flush(conn)
    client = Client(bench_url())
    task_type = "bench:astamp" if use_async else "bench:stamp"

    def enqueue_stamp(seq: int) -> None:
        client.enqueue(task_type, str(seq).encode(), queue=QUEUE)

    result = idle_pickup(conn, start_worker(concurrency, extra, use_async), enqueue_stamp, samples, start_timeout=60)
    flush(conn)
    return {
        "lib": "taskq",
        "workload": "latency_async" if use_async else "latency",
        "concurrency": concurrency,
        **result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=["enqueue", "bulk", "memory", "process", "latency"])
    parser.add_argument("-n", type=int, default=None, help="tasks (default per workload)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--async", dest="use_async", action="store_true", help="use the async handler")
    parser.add_argument("--threads", type=int, default=1, help="enqueue: producer threads sharing one Client")
    parser.add_argument("--samples", type=int, default=250)
    parser.add_argument("--event-maxlen", type=int, default=Limits().event_maxlen)
    parser.add_argument("--worker-arg", action="append", default=[], help="extra taskworker argument")
    parser.add_argument("--work", choices=KINDS, default=None, help="process: the handlers' work (bench/work.py)")
    parser.add_argument(
        "--tracing",
        choices=["off", "sdk"],
        default="off",
        help="process: off, or sdk: the worker with an OpenTelemetry SDK and the tasks with a trace context",
    )
    parser.add_argument(
        "--count-from", type=int, default=0, help="process: start the clock at this completion (default: the first)"
    )
    a = parser.parse_args()
    if a.workload == "enqueue":
        emit(enqueue_one_by_one(a.n or 50_000, a.threads))
    elif a.workload == "bulk":
        emit(enqueue_bulk(a.n or 100_000, a.batch))
    elif a.workload == "memory":
        emit(memory(a.n or 100_000, a.event_maxlen))
    elif a.workload == "process":
        emit(process(a.n or 100_000, a.concurrency, a.use_async, a.worker_arg, a.work, a.count_from, a.tracing))
    else:
        emit(latency(a.samples, a.concurrency, a.use_async, a.worker_arg))


if __name__ == "__main__":
    main()
