"""A Python worker on asynq queues beside a Go asynq server, on the same machine, in the same minutes: drain rates
and Redis time per task. Run from the repository root with the project's venv:

    .venv/bin/python -m bench.asynq_side_by_side -n 20000 --rounds 3 --concurrency 10

Each round, in turns: a backlog of ``n`` no-op tasks is written by Go asynq's own client (``goasynq fill``), then
drained by ONE worker process: Go asynq v0.26 (``goasynq serve -quiet``: the handler returns at once), then
``taskworker`` with ``TASKS_KEY_FORMAT=asynq`` (``bench.noop_tasks``), then both at once on the same queue
(backlog ``2n``). The clock starts when the first task leaves the queue and stops when pending and active are
both empty (``measure.wait_drained``). Redis time per task is the commandstats difference over the drain
(``redis_cost``), the bench's own polling left out, and the CPU of Redis's main thread (INFO cpu) beside it.

The Go program is the interop tests' harness (``tests/asynq/goasynq``), built with Go from the module proxy on first
use. Both count the whole Redis server: run it on a Redis nothing else uses.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import redis

from tests.asynq import go_asynq

from .common import bench_url, connect, emit, flush, machine
from .measure import start_logged, stop, wait_drained
from .redis_cost import commandstats, difference, main_thread_cpu

QUEUE = "bench"
PENDING, ACTIVE = f"asynq:{{{QUEUE}}}:pending", f"asynq:{{{QUEUE}}}:active"


def go_worker(concurrency: int) -> subprocess.Popen[bytes]:
    cmd = [str(go_asynq.binary()), "serve", "-quiet", "-queues", f"{QUEUE}=1", "-concurrency", str(concurrency)]
    return start_logged(cmd, "asynq-bench-go.log", REDIS_URL=bench_url())


def python_worker(concurrency: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "manage.py", "taskworker", "--queues", QUEUE, "--concurrency", str(concurrency)]
    cmd += ["--import", "bench.noop_tasks", "--skip-checks"]
    return start_logged(cmd, "asynq-bench-python.log", REDIS_URL=bench_url(), TASKS_KEY_FORMAT="asynq")


WORKERS: dict[str, Callable[[int], list[subprocess.Popen[bytes]]]] = {
    "go": lambda c: [go_worker(c)],
    "python": lambda c: [python_worker(c)],
    "both": lambda c: [go_worker(c), python_worker(c)],
}


def drain_one(side: str, n: int, concurrency: int) -> dict[str, Any]:
    """Fill, then time ``side``'s worker(s) draining the backlog; Redis µs per task over the drain."""
    conn = connect()
    flush(conn)
    total = 2 * n if side == "both" else n
    go_asynq.run(bench_url(), "fill", "-n", str(total), "-queue", QUEUE, "-type", "bench:noop")
    stats0, cpu0 = commandstats(conn), main_thread_cpu(conn)

    def remaining() -> int:
        pipe = conn.pipeline(transaction=False)
        pipe.llen(PENDING)
        pipe.llen(ACTIVE)
        return sum(pipe.execute())

    workers = WORKERS[side](concurrency)
    try:
        result = wait_drained(remaining, total, worker=workers[-1])
    finally:
        for worker in workers:
            stop(worker)
    result.pop("cpu_cores", None)
    result.pop("cpu_us_per_task", None)
    spent = difference(stats0, commandstats(conn))
    spent.pop("llen", None)  # the bench's own polling
    result["redis_command_usec_per_task"] = round(sum(usec for _, usec in spent.values()) / total, 1)
    result["redis_cpu_usec_per_task"] = round((main_thread_cpu(conn) - cpu0) * 1e6 / total, 1)
    result["processed"] = int(conn.get(f"asynq:{{{QUEUE}}}:processed") or 0)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20000, help="tasks per side per round (default 20000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args(argv)
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        for side in WORKERS:
            row = {"round": number, "side": side, **drain_one(side, args.n, args.concurrency)}
            print(row, file=sys.stderr)
            rounds.append(row)
    emit({"machine": machine(), "n": args.n, "concurrency": args.concurrency, "rounds": rounds})


if __name__ == "__main__":
    try:
        main()
    except (redis.ConnectionError, go_asynq.GoAsynqError) as exc:
        raise SystemExit(f"asynq_side_by_side: {exc}") from None
