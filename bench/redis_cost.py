"""Redis CPU per task over its whole life, read from INFO commandstats: what one Redis core (and so one queue, a
Cluster slot) can carry. Run from the repository root with the project's venv:

    .venv/bin/python -m bench.redis_cost live -n 5000     # enqueued one by one into a running, idle worker
    .venv/bin/python -m bench.redis_cost bulk -n 50000    # enqueue_many (lists of 1,000) into a running worker
    .venv/bin/python -m bench.redis_cost transitions      # each script alone: Redis µs per call and per task
    .venv/bin/python -m bench.redis_cost transitions --evalsha  # the same with EVALSHA where FCALL is the default
    .venv/bin/python -m bench.redis_cost failures         # what a stored traceback and error group add to retry
    .venv/bin/python -m bench.redis_cost ack-paths -n 10  # fetch-on-ack vs dequeue + done, FCALL vs EVALSHA (rounds)
    .venv/bin/python -m bench.redis_cost call-cost -n 10  # the fixed cost of a script call, FCALL vs EVALSHA

A worker (concurrency 10, no-op handlers) is started and warmed up first; the counters are read before the first
task is enqueued and after the last one is processed, so the figures cover enqueue, fetch, acknowledgement and
whatever the worker does meanwhile (heartbeats, lease extension, maintenance). Two figures per task:

- ``redis_cpu_usec_per_task``: CPU of Redis's main thread (INFO cpu), everything included: parsing, network I/O,
  scripts, commands. This is what fills one core.
- ``command_usec_per_task``: commandstats, top-level only: EVALSHA/EVAL/FCALL (which include the commands their
  scripts call) plus the commands clients send directly. ``by_command`` lists every command; the ones a script
  calls are counted there too, inside their script's time, so that table does not add up to the total.

The bench's own polling (GET, INFO) is left out. Both count the whole server: run it on a Redis nothing else
uses (e.g. ``redis-server --port 6399 --save ''`` and ``BENCH_REDIS_URL=redis://127.0.0.1:6399/4``).

To compare two trees, run this file from each (``cd other-tree && python -m bench.redis_cost ...``): the worker
and the Client come from the tree it runs in.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import redis

from taskq.queues.engine import Client, Keys
from taskq.queues.engine.broker import functions
from taskq.queues.engine.transitions import FetchNext

from .common import bench_url, connect, emit, flush
from .measure import stop
from .taskq_bench import QUEUE, start_worker

#: Commands the bench sends itself to watch the run; not the engine's cost.
OWN_COMMANDS = frozenset({"get", "info", "flushdb", "config|resetstat", "ping"})


def commandstats(conn: redis.Redis) -> dict[str, tuple[int, int]]:
    """``{command: (calls, usec)}`` since the server started."""
    stats = conn.info("commandstats")
    return {name.removeprefix("cmdstat_"): (int(s["calls"]), int(s["usec"])) for name, s in stats.items()}


#: Commands that only the engine's scripts call in these workloads: their time is inside EVALSHA's.
SCRIPT_ONLY = frozenset(
    {
        "xadd",
        "hset",
        "hmget",
        "hget",
        "zadd",
        "hincrby",
        "zscore",
        "lpush",
        "rpop",
        "exists",
        "zrem",
        "del",
        "incrby",
        "publish",
        "expire",
        "hdel",
        "zrangebyscore",
        "zcard",
        "llen",
        "lrem",
        "xtrim",
        "sadd",
        "srem",
        "zremrangebyrank",
        "zrange",
        "lrange",
        "hincrbyfloat",
        "incr",
        "set",
        "unlink",
        "pexpire",
        "hgetall",
        "zrangestore",
        "lmove",
    }
)


def main_thread_cpu(conn: redis.Redis) -> float:
    cpu = conn.info("cpu")
    return float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"])


def difference(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    out = {}
    for name, (calls, usec) in after.items():
        calls0, usec0 = before.get(name, (0, 0))
        if calls > calls0 and name not in OWN_COMMANDS:
            out[name] = (calls - calls0, usec - usec0)
    return out


def wait_until(finished: Callable[[], bool], worker: Any, timeout: float, poll: float = 0.005) -> None:
    """Poll ``finished()`` until it says so, failing when the worker process exits first or after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not finished():
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited with code {worker.returncode} (see its log)")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the tasks were not all processed after {timeout:.0f} s")
        time.sleep(poll)


def wait_processed(conn: redis.Redis, key: str, target: int, timeout: float, worker: Any) -> None:
    wait_until(lambda: int(conn.get(key) or 0) >= target, worker, timeout)


def task_life(mode: str, n: int, concurrency: int) -> dict[str, Any]:
    """``live``: one task per enqueue call; ``bulk``: lists of 1,000 (``enqueue_many``)."""
    return task_life_in(n, 1 if mode == "live" else 1000, concurrency, f"redis_cost_{mode}")


def task_life_in(n: int, batch: int, concurrency: int, workload: str) -> dict[str, Any]:
    """Redis per task life with ``n`` tasks enqueued ``batch`` at a time (1: ``enqueue``, else ``enqueue_many``)
    into a running, warmed-up worker, counted from before the first enqueue to the last task processed."""
    conn = connect()
    flush(conn)
    client = Client(bench_url())
    processed = Keys().queue(QUEUE).processed
    worker = start_worker(concurrency, [])
    try:
        client.enqueue("bench:noop", b"", queue=QUEUE)  # warm-up: scripts loaded, queue known, worker fetching
        wait_processed(conn, processed, 1, 60, worker)
        time.sleep(0.5)
        before, cpu0, started = commandstats(conn), main_thread_cpu(conn), time.perf_counter()
        if batch == 1:
            for _ in range(n):
                client.enqueue("bench:noop", b"", queue=QUEUE)
        else:
            for first in range(0, n, batch):
                client.enqueue_many([("bench:noop", b"")] * min(batch, n - first), queue=QUEUE)
        wait_processed(conn, processed, n + 1, 600, worker)
        elapsed = time.perf_counter() - started
        cpu = main_thread_cpu(conn) - cpu0
        spent = difference(before, commandstats(conn))
    finally:
        stop(worker)
        client.close()
    flush(conn)
    top_level = sum(usec for name, (_, usec) in spent.items() if name not in SCRIPT_ONLY)
    return {
        "lib": "taskq",
        "workload": workload,
        "tasks": n,
        "seconds": round(elapsed, 2),
        "redis_cpu_usec_per_task": round(cpu * 1e6 / n, 1),
        "command_usec_per_task": round(top_level / n, 1),
        "script_usec_per_task": round(sum(spent.get(name, (0, 0))[1] for name in SCRIPT_COMMANDS) / n, 1),
        "script_calls_per_task": round(sum(spent.get(name, (0, 0))[0] for name in SCRIPT_COMMANDS) / n, 2),
        "by_command": by_command(spent, n),
    }


def by_command(spent: dict[str, tuple[int, int]], n: int) -> dict[str, dict[str, float]]:
    """Every command's calls per task and µs per call, the costliest first."""
    return {
        name: {"calls_per_task": round(calls / n, 3), "usec_per_call": round(usec / calls, 2)}
        for name, (calls, usec) in sorted(spent.items(), key=lambda kv: -kv[1][1])
    }


#: The commands that run a transition script: EVALSHA (EVAL after NOSCRIPT) or FCALL (Redis functions).
SCRIPT_COMMANDS = ("evalsha", "eval", "fcall")


def script_usec(conn: redis.Redis, step: Any) -> tuple[int, int]:
    """(Script calls, their µs) that ``step()`` costs, from commandstats."""

    def totals() -> tuple[int, int]:
        stats = commandstats(conn)
        runs = [stats.get(name, (0, 0)) for name in SCRIPT_COMMANDS]
        return sum(calls for calls, _ in runs), sum(usec for _, usec in runs)

    calls0, usec0 = totals()
    step()
    calls, usec = totals()
    return calls - calls0, usec - usec0


def transitions(n: int, evalsha: bool = False) -> dict[str, Any]:
    """The Redis time of each transition of a task's life, alone, on a quiet queue: enqueue, dequeue and done one
    task per call (a worker fed one task at a time), and in batches (enqueue_many of 1,000, dequeue of 50, done of
    50); then fetch-on-ack, where each done also leases the next task (or 50), so a life is an enqueue and one
    done. Per call and per task; and the tasks per second one Redis core could carry for that life. Scripts run as
    Redis functions where the server has them, as EVALSHA with ``evalsha``."""
    conn = connect()
    flush(conn)
    client = Client(bench_url())
    broker, ops = client.broker, client.broker.transitions
    if evalsha:
        functions.use_evalsha(broker.conn)
    client.enqueue("bench:noop", b"", queue=QUEUE)  # scripts loaded, queue known
    broker.run(ops.done(QUEUE, [(t.id, t.token) for t in broker.run(ops.dequeue(QUEUE, 1, 30, "w", "w:0:"))], "w"))
    rows: dict[str, dict[str, float]] = {}

    def measure(name: str, per_call: int, step: Any) -> None:
        calls, usec = script_usec(conn, step)
        rows[name] = {
            "calls": calls,
            "usec_per_call": round(usec / calls, 1),
            "usec_per_task": round(usec / (calls * per_call), 2),
        }

    measure("enqueue (1 per call)", 1, lambda: [client.enqueue("bench:noop", b"", queue=QUEUE) for _ in range(n)])
    leased: list[Any] = []
    measure(
        "dequeue (1 per call)",
        1,
        lambda: [leased.extend(broker.run(ops.dequeue(QUEUE, 1, 30, "w", f"w:{i}:"))) for i in range(n)],
    )
    measure("done (1 per call)", 1, lambda: [broker.run(ops.done(QUEUE, [(t.id, t.token)], "w")) for t in leased])
    items = [("bench:noop", b"")] * 1000
    measure(
        "enqueue_many (1,000 per call)",
        1000,
        lambda: [client.enqueue_many(items, queue=QUEUE) for _ in range(n // 1000)],
    )
    batches: list[list[Any]] = []
    measure(
        "dequeue (50 per call)",
        50,
        lambda: [
            batches.append(broker.run(ops.dequeue(QUEUE, 50, 30, "w", f"w:b{i}:"))) for i in range(n // 1000 * 20)
        ],
    )
    measure(
        "done (50 per call)",
        50,
        lambda: [broker.run(ops.done(QUEUE, [(t.id, t.token) for t in b], "w")) for b in batches],
    )
    fetch_on_ack(client, n, measure)
    client.close()
    flush(conn)

    def life(*names: str) -> float:
        return round(sum(rows[name]["usec_per_task"] for name in names), 1)

    one = life("enqueue (1 per call)", "dequeue (1 per call)", "done (1 per call)")
    bulk = life("enqueue_many (1,000 per call)", "dequeue (50 per call)", "done (50 per call)")
    return {
        "lib": "taskq",
        "workload": "redis_cost_transitions",
        "scripts_as": "fcall" if client.broker.as_functions else "evalsha",
        "tasks": n,
        "scripts": rows,
        "life_usec_one_by_one": one,
        "life_usec_batched": bulk,
        "life_usec_one_by_one_fetch_on_ack": life("enqueue (1 per call)", "done + lease the next (1 per call)"),
        "life_usec_batched_fetch_on_ack": life("enqueue_many (1,000 per call)", "done + lease the next (50 per call)"),
        "ceiling_per_core_one_by_one": round(1e6 / one),
        "ceiling_per_core_batched": round(1e6 / bulk),
    }


def fetch_on_ack(client: Client, n: int, measure: Any) -> None:
    """Each done (of one task, or of 50) also leases as many next tasks, as a worker's ack does (FetchNext)."""
    broker, ops = client.broker, client.broker.transitions
    for size in (1, 50):
        rounds = n // size
        client.enqueue_many([("bench:noop", b"")] * (rounds * size + size), queue=QUEUE)
        held = [list(broker.run(ops.dequeue(QUEUE, size, 30, "w", f"w:s{size}:")))]

        def ack_and_lease(size: int = size, rounds: int = rounds, held: list[list[Any]] = held) -> None:
            for i in range(rounds):
                then = FetchNext(size, 30, f"w:a{size}:{i}:")
                acked = broker.run(ops.done(QUEUE, [(t.id, t.token) for t in held[0]], "w", then=then))
                held[0] = list(acked.leased)

        measure(f"done + lease the next ({size} per call)", size, ack_and_lease)
        broker.run(ops.done(QUEUE, [(t.id, t.token) for t in held[0]], "w"))


class AckPaths:
    """The variants ``ack_paths`` compares, on one queue with a backlog: a client that runs scripts as functions
    and one that runs them with EVALSHA; dequeue + done against fetch-on-ack; 1 and 50 tasks per call."""

    def __init__(self, block: int) -> None:
        self.block = block
        self.clients = {"fcall": Client(bench_url()), "evalsha": Client(bench_url())}
        functions.use_evalsha(self.clients["evalsha"].broker.conn)
        self.variants = [
            (how, path, size) for how in self.clients for path in ("dequeue + done", "fetch-on-ack") for size in (1, 50)
        ]
        self.held: dict[tuple[str, int], list[Any]] = {}  # what each fetch-on-ack variant holds leased, to ack next

    def fill(self, rounds: int) -> None:
        """The backlog every round takes from, and the first leases of the fetch-on-ack variants."""
        lists = len(self.variants) * rounds * self.block // 1000 + 2
        self.clients["fcall"].enqueue_many([("bench:noop", b"")] * 1000 * lists, queue=QUEUE)
        for how, path, size in self.variants:
            if path == "fetch-on-ack":
                broker = self.clients[how].broker
                self.held[(how, size)] = list(broker.run(broker.transitions.dequeue(QUEUE, size, 60, "w", f"{how}:")))

    def fetch_and_ack(self, how: str, path: str, size: int, round_: int) -> None:
        broker = self.clients[how].broker
        ops = broker.transitions
        for i in range(self.block // size):
            token = f"w:{how}{size}:{round_}:{i}:"
            if path == "dequeue + done":
                leased = broker.run(ops.dequeue(QUEUE, size, 60, "w", token))
                broker.run(ops.done(QUEUE, [(t.id, t.token) for t in leased], "w"))
            else:
                acks = [(t.id, t.token) for t in self.held[(how, size)]]
                self.held[(how, size)] = list(
                    broker.run(ops.done(QUEUE, acks, "w", then=FetchNext(size, 60, token))).leased
                )

    def enqueue(self, how: str, size: int) -> int:
        client = self.clients[how]
        if size == 1:
            for _ in range(self.block):
                client.enqueue("bench:noop", b"", queue=QUEUE)
            return self.block
        client.enqueue_many([("bench:noop", b"")] * 1000, queue=QUEUE)
        return 1000

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def ack_paths(rounds: int, block: int = 200) -> dict[str, Any]:
    """Fetch-on-ack against a dequeue and a done, and FCALL against EVALSHA, on a queue with a backlog: the Redis
    µs per task of fetching and acknowledging it, one task per call and 50 per call, and of enqueueing it (one by
    one, and in lists of 1,000). The variants take turns in blocks of ``block`` tasks, ``rounds`` times, so a busy
    moment of the machine hits each alike; each figure is the median over the rounds."""
    conn = connect()
    flush(conn)
    paths = AckPaths(block)
    paths.fill(rounds)
    samples: dict[str, list[float]] = {}
    for round_ in range(rounds):
        for how, path, size in paths.variants:
            _, usec = script_usec(conn, partial(paths.fetch_and_ack, how, path, size, round_))
            samples.setdefault(f"{path}, {size} per call, {how}", []).append(usec / block)
        for how in paths.clients:
            for size in (1, 1000):
                tasks: list[int] = []
                _, usec = script_usec(
                    conn, lambda how=how, size=size, tasks=tasks: tasks.append(paths.enqueue(how, size))
                )
                samples.setdefault(f"enqueue, {size} per call, {how}", []).append(usec / tasks[0])
    paths.close()
    flush(conn)
    usec = {name: round(statistics.median(values), 2) for name, values in samples.items()}
    lives = {
        f"{path}, {how}, {label}": round(
            usec[f"enqueue, {enq} per call, {how}"] + usec[f"{path}, {size} per call, {how}"], 1
        )
        for how in paths.clients
        for label, size, enq in (("one by one", 1, 1), ("bulk", 50, 1000))
        for path in ("dequeue + done", "fetch-on-ack")
    }
    return {
        "lib": "taskq",
        "workload": "redis_cost_ack_paths",
        "rounds": rounds,
        "block": block,
        "usec_per_task": usec,
        "life_usec_per_task": lives,
        "runs": {name: [round(v, 1) for v in values] for name, values in samples.items()},
    }


def call_cost(rounds: int, block: int = 500) -> dict[str, Any]:
    """The fixed cost of a script call, FCALL against EVALSHA: a done of a task that does not exist (the fence's
    one HMGET, then the reply) and a dequeue of an empty queue, in turns of ``block`` calls, ``rounds`` times;
    Redis µs per call, medians, and the median of the rounds' FCALL / EVALSHA ratios."""
    conn = connect()
    flush(conn)
    brokers = {"fcall": Client(bench_url()).broker, "evalsha": Client(bench_url()).broker}
    functions.use_evalsha(brokers["evalsha"].conn)
    calls = {
        "done of an unknown task": lambda ops: ops.done(QUEUE, [("nope", "tok")], "w"),
        "dequeue of an empty queue": lambda ops: ops.dequeue(QUEUE, 1, 30, "w", "w:"),
    }
    out: dict[str, Any] = {}
    for name, build in calls.items():
        per_call: dict[str, list[float]] = {how: [] for how in brokers}
        for _ in range(rounds):
            for how, broker in brokers.items():
                n, usec = script_usec(
                    conn,
                    lambda broker=broker, build=build: [broker.run(build(broker.transitions)) for _ in range(block)],
                )
                per_call[how].append(usec / n)
        ratios = [f / e for f, e in zip(per_call["fcall"], per_call["evalsha"], strict=True)]
        out[name] = {how: round(statistics.median(v), 2) for how, v in per_call.items()}
        out[name]["fcall_over_evalsha"] = round(statistics.median(ratios), 2)
    for broker in brokers.values():
        broker.close()
    flush(conn)
    return {"lib": "taskq", "workload": "redis_cost_call_cost", "rounds": rounds, "block": block, "usec_per_call": out}


def failures(n: int, rounds: int = 5) -> dict[str, Any]:
    """The retry script's Redis time per call without a traceback or error group (a lease that expired), with a
    realistic one (a 2 KB traceback, 20 groups in turn), and with a new group every call past the cap (each call
    trims one); then the memory of a queue's error groups at the cap, and of a traceback in a task's hash."""
    from dataclasses import replace

    from taskq.queues.engine.failures import Failure

    conn = connect()
    flush(conn)
    client = Client(bench_url())
    broker, ops = client.broker, client.broker.transitions
    frames = "".join(
        f'  File "/srv/app/shop/tasks.py", line {100 + i}, in step_{i}\n    do_step_{i}(order)\n' for i in range(20)
    )
    traceback = "Traceback (most recent call last):\n" + frames + "ValueError: order 123456 declined\n"

    def failure(group: int) -> Failure:
        return Failure("ValueError", f"order {group} declined: gateway said no", f"shop.tasks:step_{group}", traceback)

    def retry_all(name: str, failure_of: Any) -> dict[str, float]:
        for _ in range(n):
            client.enqueue("bench:fail", b"{}", queue=QUEUE)
        leased = [t for i in range(n) for t in broker.run(ops.dequeue(QUEUE, 1, 30, "w", f"w:{name}:{i}:"))]
        calls, usec = script_usec(
            conn,
            lambda: [
                broker.run(
                    ops.retry(QUEUE, t.id, t.token, time.time() + 3600, "ValueError", worker="w", failure=failure_of(i))
                )
                for i, t in enumerate(leased)
            ],
        )
        return {"calls": calls, "usec_per_call": round(usec / calls, 1)}

    client.enqueue("bench:fail", b"{}", queue=QUEUE)  # scripts loaded, queue known
    variants = {
        "retry, no traceback or group": lambda i: None,
        "retry, 20 groups in turn, no traceback": lambda i: replace(failure(i % 20), traceback=""),
        "retry, 2 KB traceback, 20 groups in turn": lambda i: failure(i % 20),
        "retry, a new group each call past the cap": lambda i: failure(10**6 + i),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(rounds):  # interleaved, so a busy moment of the machine hits every variant alike
        for name, failure_of in variants.items():
            samples[name].append(retry_all(f"{name[:12]}{round_}", failure_of)["usec_per_call"])
    rows = {name: {"usec_per_call_median": statistics.median(v), "runs": v} for name, v in samples.items()}
    keys = Keys().queue(QUEUE)
    groups = conn.zcard(keys.errors_seen)
    groups_bytes = conn.memory_usage(keys.errors, samples=0) + conn.memory_usage(keys.errors_seen, samples=0)
    some = conn.zrange(keys.retry, -1, -1)[0].decode()  # of the last row: it has a traceback
    with_tb = conn.memory_usage(keys.task(some), samples=0)
    conn.hdel(keys.task(some), "traceback")
    without_tb = conn.memory_usage(keys.task(some), samples=0)
    client.close()
    flush(conn)
    return {
        "lib": "taskq",
        "workload": "redis_cost_failures",
        "calls_per_run": n,
        "scripts": rows,
        "error_groups_kept": groups,
        "error_groups_bytes": groups_bytes,
        "error_group_bytes_each": round(groups_bytes / groups),
        "traceback_bytes": len(traceback),
        "task_hash_bytes_with_traceback": with_tb,
        "task_hash_bytes_without": without_tb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["live", "bulk", "transitions", "failures", "ack-paths", "call-cost"])
    parser.add_argument("-n", type=int, default=None, help="tasks (default: 5,000 live, 50,000 bulk)")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--evalsha", action="store_true", help="transitions: run scripts with EVALSHA, not FCALL")
    args = parser.parse_args()
    if args.mode == "transitions":
        emit(transitions(args.n or 5000, args.evalsha))
    elif args.mode == "ack-paths":
        emit(ack_paths(args.n or 10))
    elif args.mode == "call-cost":
        emit(call_cost(args.n or 10))
    elif args.mode == "failures":
        emit(failures(args.n or 1000))
    else:
        emit(task_life(args.mode, args.n or (5000 if args.mode == "live" else 50_000), args.concurrency))


if __name__ == "__main__":
    main()
