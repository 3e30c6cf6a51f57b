"""The soak: half an hour (or hours) of mixed traffic, with live pages open, watching that nothing grows.

    python bench/soak.py [--minutes 30 | --hours N | --seconds N] [--pages 200] [--rate 100] [--retention 60]
                         [--redis URL] [--redis-port 6451] [--port 6452] [--out DIR]

What runs (everything started and stopped by this script):
- a Redis server of its own on --redis-port (``redis-server --save ''``), so that its memory and its clients are
  the soak's alone; or, with --redis, the database that URL names (flushed before and after; 0 and 10-15 are
  refused), whose server-wide figures then include whatever else uses that server;
- the console under daphne on --port, with a fresh SQLite database in a temporary folder;
- ONE worker, ``manage.py taskworker --processes 2`` on the soak's queues, and the periodic scheduler
  (``manage.py taskscheduler``), both with ``--import bench.soak_tasks`` (the handlers and a cron entry firing
  every 5 s);
- --pages live pages held open over WebSockets from this process (``bench/soak_pages.py``: queue pages on each
  tab, dashboards, servers pages, summary bars);
- the traffic, about --rate tasks a second from this process: per second at 100/s, 30 tasks one by one, a bulk
  ``enqueue_many`` of 50, 5 tasks that fail their first attempt and succeed on the retry, 10 scheduled tasks
  (``process_in`` and ``process_at``, 5-30 s ahead; less in a run under 5 minutes), a three-step chain every 2 s,
  and the cron entry. Completed tasks and workflows are kept --retention seconds (the janitor deletes them while
  the soak runs).

Every --interval seconds (10 s; at most a twentieth of a short run) it records the worker's RSS (the supervisor
and each child, and their sum), the console's and the scheduler's RSS, Redis's ``used_memory`` (and, not judged,
the part of it its event streams take: they grow to their cap at each queue's own pace), the open file
descriptors of the worker (all its processes) and of the console, Redis's ``connected_clients``, and the sockets
each process holds (all of them, and those connected to Redis), into ``samples.csv`` and ``samples.json`` under
--out, and draws them as one PNG (``soak.png``, ``bench/soak_chart.py`` under ``BENCH_PEERS_PYTHON``'s
matplotlib: the project's venv has no plotting library).

Verdicts (``report.json``, printed last; the exit status is 1 when one fails):
- growth: over the traffic after the warm-up (--warmup, default the first 5 minutes, or a sixth of a shorter
  run), the median of a measure's last tenth of samples against the median of its first tenth; none grows by
  more than --max-growth (10 %);
- logs: the worker's, the scheduler's and the console's hold no ERROR, CRITICAL or Traceback line, and Redis's no
  warning after it was ready, except the lines of the provoked failures (they carry ``soak_tasks.PROVOKED``);
- pages: once the traffic stopped and the retention passed, every open page's view (built from what was pushed)
  equals a fresh load of the same page;
- memory: after the traffic, the retention and two janitor rounds, Redis's ``used_memory`` less its event streams
  (a log capped at ``TASKS_EVENT_STREAM_MAXLEN`` by design: set to --stream-maxlen here) is within
  --memory-tolerance (10 %) of the same figure before the traffic (all processes up, all pages open).
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlparse

import redis

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import checked_url, keys_memory  # noqa: E402
from bench.live_latency import console_env, start_console  # noqa: E402
from bench.live_sockets import redis_connections, session_cookie  # noqa: E402
from bench.soak_pages import PageFleet, compare, subscriptions  # noqa: E402
from bench.soak_tasks import CRON_QUEUE, PROVOKED  # noqa: E402
from taskq import Client, Inspector, chain, sig  # noqa: E402
from taskq.queues.engine.settings import TaskqSettings  # noqa: E402
from tests.ports import accepting  # noqa: E402

QUEUES = ["soak-one", "soak-bulk", "soak-retry", "soak-later", "soak-flow", CRON_QUEUE]
PEERS_PYTHON = os.environ.get("BENCH_PEERS_PYTHON", "/tmp/bench-peers-venv/bin/python")
#: The chart's panels: (title, unit, columns); the worker's per-process columns are added as they appear.
PANELS = [
    ("Worker RSS (supervisor, each child, sum)", "MiB", ["worker_rss"]),
    ("Console and scheduler RSS", "MiB", ["console_rss", "scheduler_rss"]),
    ("Redis used_memory, and the part of it its event streams take", "MiB", ["redis_used_memory", "redis_streams"]),
    ("Open file descriptors", "count", ["worker_fds", "console_fds"]),
    (
        "Sockets held (the console's: one per live page, and its Redis connections)",
        "count",
        ["worker_sockets", "console_sockets"],
    ),
    ("Connections to Redis", "count", ["redis_clients", "worker_redis_conns", "console_redis_conns"]),
]
JUDGED = ["worker_rss", "console_rss", "scheduler_rss", "redis_used_memory", "worker_fds", "console_fds"] + [
    "redis_clients",
    "worker_sockets",
    "console_sockets",
    "worker_redis_conns",
    "console_redis_conns",
]
ERROR_LINE = re.compile(r"\b(ERROR|CRITICAL)\b|Traceback")


# -- processes ------------------------------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """``pid``'s children, grandchildren..., from /proc (sorted)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(raw[raw.rfind(")") + 2 :].split()[1]), []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return sorted(found)


def rss(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fds(pid: int) -> tuple[int, int]:
    """(open file descriptors, of which sockets) of a process."""
    total = sockets = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        total += 1
        try:
            sockets += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return total, sockets


def process_figures(name: str, pids: list[int], redis_port: int) -> dict[str, int]:
    """RSS, fds, sockets and Redis connections of a group of processes, summed (and RSS of each, for more
    than one: ``<name>_rss_<n>``, the first being the group's parent); nothing when none runs."""
    row = {f"{name}_{k}": 0 for k in ("rss", "fds", "sockets", "redis_conns")} if pids else {}
    for n, pid in enumerate(pids):
        try:
            size, (total, sockets) = rss(pid), fds(pid)
            conns = redis_connections(pid, redis_port)
        except OSError:  # gone between the listing and the read (a child being replaced)
            continue
        if len(pids) > 1:
            row[f"{name}_rss_{'supervisor' if n == 0 else f'child{n}'}"] = size
        row[f"{name}_rss"] += size
        row[f"{name}_fds"] += total
        row[f"{name}_sockets"] += sockets
        row[f"{name}_redis_conns"] += conns
    return row


def die_with_parent() -> None:
    """In a child, before it runs: SIGTERM it when the soak dies, even by SIGKILL (a smoke run's timeout), so that
    no worker, scheduler or Redis of a soak outlives it (Linux's PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


class Stack:
    """The soak's processes: Redis (unless given), the console, the worker and the scheduler."""

    def __init__(self, args: argparse.Namespace, out: Path, workdir: Path) -> None:
        self.args, self.out, self.workdir = args, out, workdir
        self.redis_server: subprocess.Popen[bytes] | None = None
        self.url = checked_url(args.redis) if args.redis else f"redis://127.0.0.1:{args.redis_port}/1"
        self.redis_port = urlparse(self.url).port or 6379
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start_redis(self) -> None:
        if self.args.redis:
            return
        command = ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--logfile", ""]  # the log on stdout, into redis.log
        log = open(self.out / "redis.log", "wb")
        self.redis_server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        if not accepting(self.redis_server, self.redis_port, 20):
            sys.exit(f"redis-server did not start:\n{(self.out / 'redis.log').read_text()}")

    def env(self) -> dict[str, str]:
        return {**console_env(self.url, self.workdir), "LOG_LEVEL": "INFO"}

    def start(self, cookie_out: list[str]) -> None:
        """The console (with its viewer account), the worker and the scheduler; their logs under --out."""
        self.processes["console"] = start_console(self.url, self.args.port, self.workdir)
        manage = [sys.executable, "manage.py"]
        weights = ",".join(f"{q}=1" for q in QUEUES)
        worker = ["taskworker", "--queues", weights, "--processes", "2", "--import", "bench.soak_tasks"]
        scheduler = ["taskscheduler", "--import", "bench.soak_tasks", "--no-admin"]
        for name, command in (("worker", worker), ("scheduler", scheduler)):
            log = open(self.out / f"{name}.log", "wb")
            self.processes[name] = subprocess.Popen(
                [*manage, *command],
                cwd=REPO,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        cookie_out.append(session_cookie(self.url, self.workdir))  # while the worker starts

    def pids(self, name: str) -> list[int]:
        process = self.processes.get(name)
        if process is None or process.poll() is not None:
            return []
        return [process.pid, *descendants(process.pid)]

    def stop(self, *names: str) -> None:
        """SIGTERM to each, then wait for each (a worker's graceful shutdown), killing one still up after 30 s."""
        processes = [self.processes[name] for name in names if name in self.processes]
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop_all(self) -> None:
        self.stop("scheduler", "worker", "console")
        if (self.workdir / "daphne.log").exists():
            shutil.copy(self.workdir / "daphne.log", self.out / "console.log")
        if self.redis_server is not None:
            self.redis_server.terminate()
            self.redis_server.wait(timeout=30)


# -- traffic --------------------------------------------------------------------------------------------------


class Traffic:
    """The mixed load, one tick a second, from a thread of its own."""

    def __init__(self, url: str, rate: float, retention: float, horizon: float) -> None:
        self.client = Client.from_settings(TaskqSettings.from_env({**os.environ, "REDIS_URL": url}))
        self.scale, self.retention = rate / 100, retention
        self.horizon = horizon  # scheduled tasks are due from a sixth of this to this many seconds ahead
        self.stopping = threading.Event()
        self.enqueued = 0
        self.ticks = 0
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, name="soak-traffic", daemon=True)

    def n(self, base: int) -> int:
        return max(1, round(base * self.scale))

    def tick(self) -> None:
        keep = {"retention": self.retention}
        for i in range(self.n(30)):
            self.client.enqueue("soak:ok", {"n": i}, queue="soak-one", **keep)
        self.client.enqueue_many([("soak:ok", {"n": i}) for i in range(self.n(50))], queue="soak-bulk", **keep)
        for _ in range(self.n(5)):
            self.client.enqueue("soak:flaky", b"", queue="soak-retry", max_retry=3, **keep)
        for i in range(self.n(10)):
            ahead = random.uniform(self.horizon / 6, self.horizon)
            when = {"process_in": ahead} if i % 2 else {"process_at": datetime.now(UTC) + timedelta(seconds=ahead)}
            self.client.enqueue("soak:ok", {"later": i}, queue="soak-later", **when, **keep)
        self.enqueued += self.n(30) + self.n(50) + self.n(5) + self.n(10)
        if self.ticks % 2 == 0:
            steps = [sig("soak:step", n, retention=self.retention) for n in range(3)]
            self.client.submit(chain(*steps), queue="soak-flow", keep=self.retention)
            self.enqueued += 3
        self.ticks += 1

    def _run(self) -> None:
        start = time.monotonic()
        while not self.stopping.is_set():
            try:
                self.tick()
            except Exception as exc:  # counted and reported: the verdicts say the soak did not hold
                self.errors.append(repr(exc))
            self.stopping.wait(max(0.0, start + self.ticks - time.monotonic()))

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.client.close()


# -- measures -------------------------------------------------------------------------------------------------


class Sampler:
    """A row of figures every ``interval`` seconds, from a thread of its own, until stopped."""

    def __init__(self, stack: Stack, conn: redis.Redis, traffic: Traffic, interval: float) -> None:
        self.stack, self.conn, self.traffic, self.interval = stack, conn, traffic, interval
        self.rows: list[dict[str, Any]] = []
        self.start = time.monotonic()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)
        self.thread.start()

    def sample(self) -> dict[str, Any]:
        port = self.stack.redis_port
        row: dict[str, Any] = {"t_s": round(time.monotonic() - self.start, 1)}
        row |= process_figures("worker", self.stack.pids("worker"), port)
        row |= process_figures("console", self.stack.pids("console"), port)
        scheduler = process_figures("scheduler", self.stack.pids("scheduler"), port)
        row |= {"scheduler_rss": scheduler["scheduler_rss"]} if scheduler else {}
        info = self.conn.info()
        row |= {
            "redis_used_memory": info["used_memory"],
            "redis_rss": info["used_memory_rss"],
            "redis_clients": info["connected_clients"],
            "redis_streams": streams_memory(self.conn),
            "enqueued": self.traffic.enqueued,
        }
        return row

    def _run(self) -> None:
        while True:
            self.rows.append(self.sample())
            if self.stopping.wait(max(0.0, self.start + len(self.rows) * self.interval - time.monotonic())):
                return

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)


def growth(rows: list[dict[str, Any]], warmup: float, end: float, limit: float) -> dict[str, Any]:
    """Per measure: the median of the last tenth of the samples taken between the warm-up and ``end`` (when the
    traffic stopped; a sample within a second of it may see processes stopping) against the median of their
    first tenth, and whether it grew by more than ``limit``."""
    steady = [row for row in rows if warmup <= row["t_s"] < end - 1]
    columns = [c for c in JUDGED + sorted({c for r in rows for c in r if c.startswith("worker_rss_")}) if c]
    tenth = max(1, len(steady) // 10)
    verdict: dict[str, Any] = {"samples": len(steady), "tenth": tenth, "measures": {}}
    for column in columns:
        values = [row[column] for row in steady if column in row]
        if len(values) < 2:
            verdict["measures"][column] = {"ok": False, "why": f"{len(values)} samples after the warm-up"}
            continue
        first, last = median(values[:tenth]), median(values[-tenth:])
        change = (last - first) / first if first else (0.0 if last == 0 else float("inf"))
        verdict["measures"][column] = {"first": first, "last": last, "growth": round(change, 4), "ok": change <= limit}
    verdict["ok"] = all(m["ok"] for m in verdict["measures"].values())
    return verdict


def streams_memory(conn: redis.Redis) -> int:
    """MEMORY USAGE of every stream key (the queues' event streams): a log that grows until its cap."""
    return sum(int(conn.memory_usage(k, samples=0) or 0) for k in conn.scan_iter(count=1000, _type="stream"))


def redis_figures(conn: redis.Redis) -> dict[str, int]:
    """used_memory and its parts, and the memory of the event streams."""
    info = conn.info("memory")
    streams = streams_memory(conn)
    figures = {k: int(info[k]) for k in ("used_memory", "used_memory_dataset", "used_memory_overhead")}
    figures |= {"used_memory_scripts": int(info.get("used_memory_scripts", 0)), "streams": streams}
    figures["keys"] = int(conn.dbsize())
    figures["used_memory_less_streams"] = figures["used_memory"] - streams
    return figures


def memory_verdict(before: dict[str, int], after: dict[str, int], tolerance: float) -> dict[str, Any]:
    base, end = before["used_memory_less_streams"], after["used_memory_less_streams"]
    return {
        "before": before,
        "after": after,
        "change": round((end - base) / base, 4),
        "tolerance": tolerance,
        "ok": end <= base * (1 + tolerance),
    }


def check_logs(out: Path) -> dict[str, Any]:
    """Error lines per log, those of the provoked failures apart."""
    verdict: dict[str, Any] = {"provoked": 0, "unprovoked": {}}
    for name in ("worker", "scheduler", "console"):
        path = out / f"{name}.log"
        for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
            if PROVOKED in line:
                verdict["provoked"] += 1
            elif ERROR_LINE.search(line):
                verdict["unprovoked"].setdefault(name, []).append(line[:300])
    path = out / "redis.log"
    ready = False
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        if "User requested shutdown" in line:  # the soak stops it: what follows is its own shutdown
            break
        if ready and re.match(r"^\d+:[A-Z] .*? # ", line):
            verdict["unprovoked"].setdefault("redis", []).append(line[:300])
        ready = ready or "Ready to accept connections" in line
    verdict["unprovoked"] = {
        name: lines[:10] + [f"... {len(lines)} in all"] for name, lines in verdict["unprovoked"].items()
    }
    verdict["ok"] = not verdict["unprovoked"]
    return verdict


def drained(url: str, timeout: float) -> float | None:
    """Wait until the soak's queues hold nothing pending, scheduled, retrying or running; the seconds it took."""
    start = time.monotonic()
    with Inspector(url) as inspector:
        while time.monotonic() - start < timeout:
            infos = inspector.queue_infos(QUEUES)
            if all(i.pending + i.scheduled + i.retry + i.active == 0 for i in infos):
                return round(time.monotonic() - start, 1)
            time.sleep(1.0)
    return None


# -- the run --------------------------------------------------------------------------------------------------


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=30.0, help="traffic for this long (default 30)")
    length.add_argument("--hours", type=float, help="traffic for this many hours (a long soak)")
    length.add_argument("--seconds", type=float, help="traffic for this many seconds (a smoke run)")
    parser.add_argument("--pages", type=int, default=200, help="live pages held open (default 200)")
    parser.add_argument("--rate", type=float, default=100.0, help="tasks a second, about (default 100)")
    parser.add_argument("--retention", type=float, default=60.0, help="seconds completed tasks are kept (60)")
    parser.add_argument("--warmup", type=float, help="seconds of warm-up (default 300, or a sixth of the run)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument("--max-growth", type=float, default=0.10, help="growth allowed after warm-up (0.10)")
    parser.add_argument("--memory-tolerance", type=float, default=0.10, help="Redis memory back within (0.10)")
    parser.add_argument("--stream-maxlen", type=int, default=5000, help="TASKS_EVENT_STREAM_MAXLEN (5000)")
    parser.add_argument("--redis", help="use this Redis database rather than a server of the soak's own")
    parser.add_argument("--redis-port", type=int, default=6451, help="port of the soak's own Redis (6451)")
    parser.add_argument("--port", type=int, default=6452, help="the console's port (6452)")
    parser.add_argument("--out", type=Path, help="folder of the samples, chart, logs (bench/results/soak-<time>)")
    parser.add_argument("--chart-python", default=PEERS_PYTHON, help="a Python with matplotlib")
    parser.add_argument("--redraw", type=Path, metavar="FOLDER", help="only draw that soak's chart again")
    args = parser.parse_args(argv)
    args.duration = args.seconds or (args.hours * 3600 if args.hours else args.minutes * 60)
    args.warmup = args.warmup if args.warmup is not None else min(300.0, args.duration / 6)
    args.interval = min(args.interval, max(1.0, args.duration / 20))
    args.janitor = 8.0 if args.retention >= 32 else max(1.0, args.retention / 4)
    args.out = args.out or REPO / "bench" / "results" / time.strftime("soak-%Y%m%d-%H%M%S", time.gmtime())
    return args


def seed(client: Client, url: str) -> None:
    """One task in each queue, deleted once done, so that the pages have their queues; waits until they ran."""
    for queue in QUEUES:
        client.enqueue("soak:ok", b"", queue=queue)
    if drained(url, 120) is None:
        sys.exit("the worker did not run the seed tasks within 120 s: see its log")


def run(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    stack.start_redis()
    conn = redis.Redis.from_url(stack.url)
    conn.flushdb()
    cookie: list[str] = []
    stack.start(cookie)
    traffic = Traffic(stack.url, args.rate, args.retention, min(30.0, max(3.0, args.duration / 10)))
    seed(traffic.client, stack.url)
    pages = PageFleet(args.port, cookie[0])
    wanted = subscriptions(args.pages, QUEUES)
    report: dict[str, Any] = {"pages_opened": pages.open(wanted)}
    time.sleep(2.0)
    before = redis_figures(conn)
    sampler = Sampler(stack, conn, traffic, args.interval)
    traffic.thread.start()
    time.sleep(args.duration)
    report["traffic"] = {"seconds": round(time.monotonic() - sampler.start, 1)}
    traffic.stop()
    report["traffic"]["enqueued"] = traffic.enqueued
    report["traffic"] |= {"tasks_per_s": round(traffic.enqueued / args.duration, 1), "errors": traffic.errors[:5]}
    stack.stop("scheduler")  # the cron entry too: nothing enqueues from here on
    report["drained_in_s"] = drained(stack.url, 300)
    time.sleep(args.retention + 2 * args.janitor + 2)  # the last completed tasks expire; the janitor deletes them
    report["memory"] = memory_verdict(before, redis_figures(conn), args.memory_tolerance)
    report["memory"]["largest_key_families_after"] = sorted(keys_memory(conn).items(), key=lambda kv: -kv[1])[:8]
    sampler.stop()  # the chart ends here: the fresh loads below open sockets of their own
    frozen = pages.freeze()
    report["pages"] = compare(frozen, pages.pages, pages.fresh_views(wanted, settle=7.0)) | pages.stats()
    report["pages"]["ok"] = report["pages"]["equal"] == len(wanted) == report["pages_opened"]
    pages.close()
    traffic.client.close()
    report["samples"] = sampler.rows
    report["traffic_end_s"] = report["traffic"]["seconds"]
    report["growth"] = growth(sampler.rows, args.warmup, report["traffic_end_s"], args.max_growth)
    if args.redis:
        conn.flushdb()
    conn.close()
    return report


def write_samples(args: argparse.Namespace, rows: list[dict[str, Any]], end: float) -> dict[str, Any]:
    """samples.csv, samples.json (the chart's input) and soak.png; the chart's outcome."""
    columns = list(dict.fromkeys(c for row in rows for c in row))
    with open(args.out / "samples.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        writer.writerows(rows)
    title = f"taskq soak: {args.duration / 60:g} min at ~{args.rate:g} tasks/s, {args.pages} live pages"
    doc = {"title": title, "warmup_s": args.warmup, "traffic_end_s": end, "panels": panels(columns), "samples": rows}
    (args.out / "samples.json").write_text(json.dumps(doc))
    return draw(args.chart_python, args.out)


def panels(columns: list[str]) -> list[dict[str, Any]]:
    """The chart's panels (``PANELS``), the worker's with a line per process."""
    worker = sorted(c for c in columns if c.startswith("worker_rss_"))
    return [
        {"title": title, "unit": unit, "series": series + (worker if series == ["worker_rss"] else [])}
        for title, unit, series in PANELS
    ]


def draw(python: str, folder: Path) -> dict[str, Any]:
    """``folder``/soak.png from its samples.json, by ``soak_chart.py`` under ``python``; the outcome."""
    chart = folder / "soak.png"
    done = subprocess.run(
        [python, str(REPO / "bench" / "soak_chart.py"), str(folder / "samples.json"), str(chart)],
        capture_output=True,
        text=True,
        check=False,
    )
    return {"path": str(chart), "ok": done.returncode == 0 and chart.exists(), "stderr": done.stderr[-1500:]}


def redraw(python: str, folder: Path) -> None:
    """Draw a finished soak's samples again with today's panels (``--redraw FOLDER``)."""
    doc = json.loads((folder / "samples.json").read_text())
    doc["panels"] = panels(list(dict.fromkeys(c for row in doc["samples"] for c in row)))
    (folder / "samples.json").write_text(json.dumps(doc))
    outcome = draw(python, folder)
    if not outcome["ok"]:
        sys.exit(outcome["stderr"])
    print(outcome["path"])


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.redraw:
        redraw(args.chart_python, args.redraw)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still stop what it started
    os.environ |= {
        "TASKS_EVENT_STREAM_MAXLEN": str(args.stream_maxlen),
        "TASKS_JANITOR_SECONDS": str(args.janitor),
        "SOAK_RETENTION": str(args.retention),
        "METRICS_ALLOW": "127.0.0.1/32",  # the console's /metrics as it answers anyway, without the warning
    }
    with tempfile.TemporaryDirectory() as workdir:
        stack = Stack(args, args.out, Path(workdir))
        try:
            report = run(args, stack)
        finally:
            stack.stop_all()
    rows = report.pop("samples")
    report["chart"] = write_samples(args, rows, report["traffic_end_s"])
    report["logs"] = check_logs(args.out)
    report["settings"] = {k: str(v) for k, v in vars(args).items()}
    verdicts = {name: report[name]["ok"] for name in ("growth", "logs", "pages", "memory", "chart")}
    report["verdicts"] = verdicts | {"traffic": not report["traffic"]["errors"]}
    (args.out / "report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    held = "every verdict holds" if all(report["verdicts"].values()) else "a verdict FAILED"
    print(f"soak: {held} ({args.out})", file=sys.stderr)  # stdout's last lines stay the JSON report
    sys.exit(0 if all(report["verdicts"].values()) else 1)


if __name__ == "__main__":
    main()
