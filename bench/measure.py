"""How a workload is measured: a timed run after a warm-up, a worker process started with its output logged,
the drain of a pre-filled queue (with the CPU the worker and redis-server used), and idle pickup latency.

Like ``common``, only the standard library and redis-py, so that the peers' scripts under their own venv use it too.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from .common import LATENCY_LIST, REPO, cpu_seconds, flush, per_task, rate, redis_pid


def stop(proc: subprocess.Popen, sig_first: int = 15, grace: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig_first)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def start_logged(cmd: list[str], log_name: str, **env: str) -> subprocess.Popen:
    """Start a worker ``cmd`` from the repository root (``env`` added to ours), its output appended after its
    command line to ``$BENCH_LOG_DIR/<log_name>`` (default /tmp)."""
    log = open(Path(os.environ.get("BENCH_LOG_DIR", "/tmp")) / log_name, "ab")
    log.write(("\n$ " + " ".join(cmd) + "\n").encode())
    log.flush()
    env = dict(os.environ, PYTHONUNBUFFERED="1", **env)
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def repeated(call: Callable[[], Any], n: int) -> Callable[[], None]:
    """What calls ``call()`` ``n`` times (a warm-up or a timed run for ``timed``)."""

    def run() -> None:
        for _ in range(n):
            call()

    return run


def timed(conn: redis.Redis, warm_up: Callable[[], Any], run: Callable[[], Any]) -> float:
    """Seconds ``run()`` takes on the emptied bench database, once ``warm_up()`` (connection, script cache, queue
    registration) has run and what it wrote has been flushed."""
    return timed_with_cpu(conn, warm_up, run)[0]


def timed_with_cpu(conn: redis.Redis, warm_up: Callable[[], Any], run: Callable[[], Any]) -> tuple[float, float]:
    """``timed``, and the CPU seconds this process spent meanwhile: on a busy machine a producer's CPU per task
    moves much less than its wall-clock rate, which includes every wait for a core."""
    flush(conn)
    warm_up()
    flush(conn)
    t, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - t, time.process_time() - cpu


def wait_drained(
    remaining,
    total: int,
    *,
    poll: float = 0.002,
    start_timeout: float = 60.0,
    drain_timeout: float = 600.0,
    pids: tuple[int, ...] = (),
    worker: subprocess.Popen | None = None,
    count_from: int = 0,
) -> dict[str, Any]:
    """Time the draining of a pre-filled queue. ``remaining()`` returns how many tasks are not finished yet.

    The clock starts at the first poll that sees fewer than ``total`` (so the worker's start-up is not counted), or
    with ``count_from`` at the first that sees that many finished (so that the start-up of every process of a
    ``--processes`` worker is left out too), and stops at the first poll that sees 0; the rate counts the tasks that
    were still there at the start."""
    deadline = time.monotonic() + start_timeout
    while True:
        left = remaining()
        if left < total and total - left >= count_from:
            break
        if worker is not None and worker.poll() is not None:
            raise RuntimeError(f"the worker exited with code {worker.returncode} before taking a task (see its log)")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker consumed nothing within {start_timeout:.0f} s")
        time.sleep(poll)
    t_start, at_start = time.perf_counter(), left
    cpu0 = {pid: cpu_seconds(pid) for pid in pids}
    deadline = time.monotonic() + drain_timeout
    while left > 0:
        if worker is not None and worker.poll() is not None:
            raise RuntimeError(f"the worker exited with code {worker.returncode} with {left} tasks left")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{left} tasks still there after {drain_timeout:.0f} s")
        time.sleep(poll * 5)
        left = remaining()
    elapsed = time.perf_counter() - t_start
    spent = {pid: cpu_seconds(pid) - cpu0[pid] for pid in pids}
    cpu = {pid: round(s / elapsed, 2) for pid, s in spent.items()}
    return {**rate(at_start, elapsed), "cpu_cores": cpu, "cpu_us_per_task": per_task(spent, at_start)}


def drain(
    conn: redis.Redis,
    worker: subprocess.Popen,
    remaining: Callable[[], int],
    total: int,
    stop_signal: int = 15,
    **wait: Any,
) -> dict[str, Any]:
    """Time a started ``worker`` draining ``total`` pre-filled tasks (see ``wait_drained``), stop it, and give the
    CPU cores that the worker and redis-server used meanwhile."""
    rpid = redis_pid(conn)
    try:
        result = wait_drained(remaining, total, pids=tuple(p for p in (worker.pid, rpid) if p), worker=worker, **wait)
    finally:
        stop(worker, sig_first=stop_signal)
    result["cpu_cores"] = {"worker": result["cpu_cores"].get(worker.pid), "redis": result["cpu_cores"].get(rpid)}
    per = result.pop("cpu_us_per_task")
    result["worker_cpu_us_per_task"], result["redis_cpu_us_per_task"] = per.get(worker.pid), per.get(rpid)
    return result


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def latency_summary(samples_s: list[float], lost: int = 0) -> dict[str, Any]:
    ms = [s * 1000 for s in samples_s]
    return {
        "samples": len(ms),
        "lost": lost,
        "p50_ms": round(percentile(ms, 0.50), 3),
        "p90_ms": round(percentile(ms, 0.90), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3) if ms else None,
        "mean_ms": round(statistics.fmean(ms), 3) if ms else None,
    }


def measure_pickup(
    conn: redis.Redis, enqueue_one, samples: int = 250, timeout: float = 10.0, gap: tuple[float, float] = (0.02, 0.05)
) -> dict[str, Any]:
    """Idle pickup latency. ``enqueue_one(seq)`` enqueues a task whose handler, as its first act, RPUSHes
    ``"<seq> <time.time()>"`` to LATENCY_LIST. Between samples the worker sits idle for a random 20-50 ms (random,
    so that a poller's interval cannot phase-lock with the samples). The sample is handler start minus the
    moment just before the enqueue call."""
    conn.delete(LATENCY_LIST)
    out: list[float] = []
    lost = 0
    for seq in range(samples):
        time.sleep(random.uniform(*gap))
        t0 = time.time()
        enqueue_one(seq)
        while True:
            got = conn.blpop([LATENCY_LIST], timeout=timeout)
            if got is None:
                lost += 1
                break
            got_seq, started = got[1].decode().split()
            if int(got_seq) == seq:
                out.append(float(started) - t0)
                break  # a late reply to an earlier, lost sample is skipped
    return latency_summary(out, lost)


def idle_pickup(
    conn: redis.Redis,
    worker: subprocess.Popen,
    enqueue_stamp: Callable[[int], Any],
    samples: int,
    stop_signal: int = 15,
    start_timeout: int = 120,
) -> dict[str, Any]:
    """The idle pickup latency (see ``measure_pickup``) of a started ``worker``, measured once it has run a first
    task and gone idle; the worker is stopped after."""
    try:
        enqueue_stamp(-1)
        for _ in range(start_timeout):
            if conn.blpop([LATENCY_LIST], timeout=1) is not None:
                break
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited with code {worker.returncode} before running a task")
        else:
            raise TimeoutError(f"the worker ran no task within {start_timeout} s")
        time.sleep(1.0)
        return measure_pickup(conn, enqueue_stamp, samples)
    finally:
        stop(worker, sig_first=stop_signal)
