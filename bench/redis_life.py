"""Redis per task life, taskq beside BullMQ in the same minutes: Redis's main-thread CPU (INFO cpu) and its script
time (INFO commandstats) per task, from the first enqueue to the last task finished, with one worker of each running
(concurrency 10, no-op handlers, finished tasks deleted: taskq's default, BullMQ's ``removeOnComplete``). Each case
enqueues ``n`` tasks one call at a time, either one task per call (taskq ``Client.enqueue``, BullMQ ``Queue.add``)
or ``--batch`` per call (``Client.enqueue_many``, ``Queue.addBulk``), each call awaited; the cases take turns,
``--rounds`` times, the order reversed every other round, and the ratios are taken within each round:

    BENCH_REDIS_URL=redis://127.0.0.1:6421/2 .venv/bin/python -m bench.redis_life --rounds 3 -n 3000 --batch 50

The figures count the whole server: give it a redis-server of its own (``redis-server --port 6421 --save ''``).
BullMQ runs in Node from its throwaway folder (``$BENCH_BULLMQ_DIR``, bench/README.md); without it only taskq runs.
Both sides are warmed up (scripts loaded, worker fetching) before the count starts; the bench's own polling (GET,
LLEN, INFO) is left out of the command time but not out of the CPU (a few hundred calls a run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import redis

from .common import connect, emit, flush
from .measure import stop
from .peers import bullmq_peer, harness
from .redis_cost import (
    SCRIPT_COMMANDS,
    by_command,
    commandstats,
    difference,
    main_thread_cpu,
    task_life_in,
    wait_until,
)

#: The queue's lists a BullMQ job waits in until a worker has finished it (it is removed then).
BULL_LISTS = ("wait", "active", "paused")


def bullmq_drained(conn: redis.Redis) -> bool:
    pipe = conn.pipeline(transaction=False)
    for name in BULL_LISTS:
        pipe.llen(f"bull:{harness.QUEUE}:{name}")
    return sum(pipe.execute()) == 0


def bullmq_life(n: int, batch: int, concurrency: int) -> dict[str, Any]:
    """BullMQ's side of one case: its worker and a producer in Node, warmed up, then ``n`` jobs counted."""
    conn = connect()
    flush(conn)
    worker = harness.start_worker(bullmq_peer.peer, concurrency)
    producer = bullmq_peer.life_producer(n, batch)
    try:
        assert producer.stdin is not None and producer.stdout is not None
        if producer.stdout.readline().strip() != "ready":
            raise RuntimeError("BullMQ's producer did not start (see its output above)")
        wait_until(lambda: bullmq_drained(conn), worker, 60, poll=0.01)
        time.sleep(0.5)
        before, cpu0 = commandstats(conn), main_thread_cpu(conn)
        started = time.perf_counter()
        producer.stdin.write("go\n")
        producer.stdin.flush()
        adds = json.loads(producer.stdout.readline())
        wait_until(lambda: bullmq_drained(conn), worker, 600, poll=0.01)
        elapsed = time.perf_counter() - started
        cpu = main_thread_cpu(conn) - cpu0
        spent = difference(before, commandstats(conn))
    finally:
        stop(producer)
        stop(worker)
    flush(conn)
    spent.pop("llen", None)  # the bench's own polling
    return {
        "lib": "bullmq",
        "workload": f"redis_life_{batch}",
        "tasks": n,
        "seconds": round(elapsed, 2),
        "enqueue_seconds": round(adds["seconds"], 2),
        "redis_cpu_usec_per_task": round(cpu * 1e6 / n, 1),
        "script_usec_per_task": round(sum(spent.get(name, (0, 0))[1] for name in SCRIPT_COMMANDS) / n, 1),
        "script_calls_per_task": round(sum(spent.get(name, (0, 0))[0] for name in SCRIPT_COMMANDS) / n, 2),
        "by_command": by_command(spent, n),
    }


def cases(batch: int, with_bullmq: bool) -> list[tuple[str, int]]:
    libs = ["taskq", "bullmq"] if with_bullmq else ["taskq"]
    return [(lib, size) for size in (1, batch) for lib in libs]


def run(rounds: int, n: int, batch: int, concurrency: int) -> dict[str, Any]:
    with_bullmq = bullmq_peer.available()
    order = cases(batch, with_bullmq)
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_ in range(rounds):
        for lib, size in order if round_ % 2 == 0 else order[::-1]:
            if lib == "taskq":
                result = task_life_in(n, size, concurrency, f"redis_life_{size}")
            else:
                result = bullmq_life(n, size, concurrency)
            runs.setdefault(f"{lib}, {size} per call", []).append(result)
    figures = ("redis_cpu_usec_per_task", "script_usec_per_task")
    summary: dict[str, Any] = {
        name: {figure: [r[figure] for r in results] for figure in figures} for name, results in runs.items()
    }
    if with_bullmq:
        for size in (1, batch):
            ours, theirs = runs[f"taskq, {size} per call"], runs[f"bullmq, {size} per call"]
            summary[f"taskq / bullmq, {size} per call"] = {
                figure: [round(a[figure] / b[figure], 2) for a, b in zip(ours, theirs, strict=True)]
                for figure in figures
            }
            summary[f"taskq / bullmq, {size} per call"]["median_cpu_ratio"] = statistics.median(
                summary[f"taskq / bullmq, {size} per call"]["redis_cpu_usec_per_task"]
            )
    return {
        "workload": "redis_life",
        "rounds": rounds,
        "tasks": n,
        "batch": batch,
        "concurrency": concurrency,
        "bullmq": bullmq_peer.peer.version if with_bullmq else "not installed: " + bullmq_peer.DIR.as_posix(),
        "summary": summary,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-n", type=int, default=3000, help="tasks per case and round")
    parser.add_argument("--batch", type=int, default=50, help="tasks per call of the batched cases")
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    emit(run(args.rounds, args.n, args.batch, args.concurrency))


if __name__ == "__main__":
    main()
