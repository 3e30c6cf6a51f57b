"""Helpers shared by every benchmark, ours and the peers' (this module imports only the standard library and
redis-py, so the peers' scripts under their own venv can use it too).

Everything runs on one Redis database, DB 4 by default (``BENCH_REDIS_URL``). Only that database is ever
flushed; the guard below refuses any URL that selects DB 0 or DB 10-15.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import redis

DEFAULT_URL = "redis://127.0.0.1:6379/4"
LATENCY_LIST = "bench:latency"  # handlers RPUSH "<seq> <time.time()>" here when they start
REPO = Path(__file__).resolve().parent.parent


def bench_url() -> str:
    return checked_url(os.environ.get("BENCH_REDIS_URL", DEFAULT_URL))


def checked_url(url: str | None) -> str:
    """``url`` (BENCH_REDIS_URL's when None) if it selects a database a benchmark may flush: not 0, not 10-15."""
    if url is None:
        return bench_url()
    path = urlparse(url).path.strip("/") or "0"
    db = int(path)
    if db == 0 or db >= 10:
        raise SystemExit(f"refusing to benchmark on Redis DB {db} ({url}): use a scratch database such as 4")
    return url


def connect(url: str | None = None) -> redis.Redis:
    return redis.Redis.from_url(url or bench_url())


def flush(conn: redis.Redis) -> None:
    """Empty the bench database (and only it) and let Redis free memory before the next measure."""
    db = conn.connection_pool.connection_kwargs.get("db", 0)
    assert db not in (0, 10, 11, 12, 13, 14, 15), db
    conn.flushdb()
    time.sleep(0.2)


def used_memory(conn: redis.Redis) -> int:
    return int(conn.info("memory")["used_memory"])


def keys_memory(conn: redis.Redis, match: str = "*") -> dict[str, int]:
    """MEMORY USAGE (all elements counted) of every key in the database, summed per key family.

    Unlike a used_memory delta, this is not disturbed by other databases on the same server. A family is the
    key name with hex/uuid-looking parts replaced, so 100,000 task hashes show up as one line."""
    families: dict[str, int] = {}
    batch: list[bytes] = []

    def drain() -> None:
        pipe = conn.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, usage in zip(batch, pipe.execute(), strict=True):
            fam = family(key.decode(errors="replace"))
            families[fam] = families.get(fam, 0) + int(usage or 0)
        batch.clear()

    for key in conn.scan_iter(match=match, count=5000):
        batch.append(key)
        if len(batch) >= 5000:
            drain()
    if batch:
        drain()
    return families


def family(key: str) -> str:
    import re

    key = re.sub(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", key)
    return key


def cpu_seconds(pid: int) -> float:
    """user+system CPU time of a process and all its descendants (read from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                raw = fh.read()
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()
        ppid = int(rest[1])
        children.setdefault(ppid, []).append(int(entry))
        stats[int(entry)] = (int(rest[11]) + int(rest[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, 0.0)
        todo += children.get(p, [])
    return total


def per_task(spent: dict[int, float], tasks: int) -> dict[int, float]:
    """CPU µs per task of each process (CPU seconds ``spent`` by pid): a figure that a busy machine distorts
    less than a rate does."""
    return {pid: round(s * 1e6 / tasks, 1) for pid, s in spent.items()} if tasks else {}


def redis_pid(conn: redis.Redis) -> int | None:
    try:
        return int(conn.info("server")["process_id"])
    except Exception:
        return None


def busy_cores(interval: float = 1.0) -> float:
    """CPU cores busy machine-wide over ``interval`` seconds (from /proc/stat), whoever uses them."""

    def read() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields[:8]), idle

    total0, idle0 = read()
    time.sleep(interval)
    total1, idle1 = read()
    span = total1 - total0
    return (span - (idle1 - idle0)) / span * (os.cpu_count() or 1) if span else 0.0


def machine_busy_seconds() -> float:
    """CPU seconds spent by everything on the machine since boot (from /proc/stat)."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def wait_quiet(threshold: float = 0.3, max_wait: float = 300.0) -> float:
    """Wait until the machine is near idle (other users' tests, builds) before a measure; returns the background
    load seen last (cores). Gives up after ``max_wait`` seconds and returns the load anyway."""
    deadline = time.monotonic() + max_wait
    load = busy_cores()
    while load > threshold and time.monotonic() < deadline:
        time.sleep(2.0)
        load = busy_cores()
    return round(load, 2)


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


def emit(result: dict[str, Any]) -> None:
    """Peers' scripts print one JSON document on stdout's last line; run.py reads it."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


def rate(tasks: int, elapsed: float, per_task: bool = False) -> dict[str, Any]:
    """The figures of a timed run over ``tasks``: seconds, tasks/s and, with ``per_task``, µs per task."""
    row: dict[str, Any] = {"tasks": tasks, "seconds": round(elapsed, 3), "tasks_per_s": round(tasks / elapsed, 1)}
    if per_task:
        row["us_per_task"] = round(elapsed / tasks * 1e6, 1)
    return row
