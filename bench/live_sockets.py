"""Many live pages on one console process: sockets per process, delivery latency and CPU, under load.

    python bench/live_sockets.py [--sockets 1000] [--rate 1000] [--seconds 30] [--port 8210]
                                 [--redis redis://127.0.0.1:6379/4]

What it does:
- starts ONE console process under daphne (ASGI) on --port, with a throwaway SQLite database and a viewer account
  (``bench/live_latency.py``'s console);
- opens --sockets WebSockets to it from this process (``bench/ws_client.py``), 100 handshakes at a time, subscribed
  to a mix of pages: 60 % the queue page of ``bench-live`` (the queue under load), 10 % the queue pages of ten idle
  queues, 20 % the dashboard, 10 % the servers page; each waits for its catch-up message;
- drives --rate transitions per second in ``bench-live`` (enqueue, dequeue, done; ``live_latency.drive``) for
  --seconds, from a process of its own; every 100 ms one enqueue is a probe with a known id;
- the delivery latency of a probe on a socket runs from just before its enqueue call to this process having
  read the message that lists it, on every socket of the loaded queue's page (same host clock).

Reports how many sockets were served, the latency p50/p95/p99/max over all (socket, probe) pairs, the probes
each socket missed, the console process's CPU (user + system, from /proc) over the run, and its Redis
connections (TCP connections from the daphne process to the Redis port, from /proc) at the end of the run.
Only the given Redis database is written (DB 0 and 10-15 are refused); the queues are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.live_latency import (  # noqa: E402
    QUEUE,
    USER,
    console_env,
    drive,
    load_arguments,
    percentile,
    start_console,
)
from bench.ws_client import WebSocket  # noqa: E402
from taskq.queues.engine import Client, Inspector  # noqa: E402

IDLE_QUEUES = [f"bench-idle-{i}" for i in range(10)]
CONNECT_ATTEMPTS = 20
OPENING = 100  # handshakes in flight at once (daphne's listen backlog is 50)
PROBE = re.compile(r'"id": "(probe-[0-9a-f]+)"')


def session_cookie(url: str, workdir: Path) -> str:
    """A logged-in session of the bench viewer in the console's database."""
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth.models import User; from django.test import Client; "
            f"c = Client(); c.force_login(User.objects.get(username={USER!r})); print(c.cookies['sessionid'].value)",
        ],
        cwd=REPO,
        env=console_env(url, workdir),
        check=True,
        capture_output=True,
    )
    return done.stdout.decode().split()[-1]


def subscriptions(n: int) -> list[dict[str, Any]]:
    """The mix of pages: per ten sockets, six on the loaded queue, one on an idle queue, two dashboards, one
    servers page."""
    pages: list[dict[str, Any]] = []
    for i in range(n):
        slot = i % 10
        if slot < 6:
            pages.append({"scope": "queue", "queue": QUEUE})
        elif slot == 6:
            pages.append({"scope": "queue", "queue": IDLE_QUEUES[(i // 10) % len(IDLE_QUEUES)]})
        elif slot < 9:
            pages.append({"scope": "dashboard"})
        else:
            pages.append({"scope": "servers"})
    return pages


async def open_page(port: int, cookie: str, page: dict[str, Any], gate: asyncio.Semaphore) -> WebSocket:
    async with gate:
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                socket = await WebSocket.connect(
                    "127.0.0.1",
                    port,
                    "/ws/live/",
                    {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"},
                )
                break
            except (ConnectionResetError, asyncio.IncompleteReadError):
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.2)  # the listen backlog overflowed: retry, as a browser does
        await socket.send_json({"op": "subscribe", **page})
        while not (await socket.receive_json()).get("replay"):
            pass
        return socket


async def listen(socket: WebSocket, seen: dict[str, float], counter: list[int]) -> None:
    """Record when each probe is first listed on this socket; count messages. Probe ids are found in the text
    (not by parsing it): the client reads a thousand sockets on a core it shares with the console."""
    while True:
        text = await socket.receive()
        counter[0] += 1
        now = time.time() * 1000
        for probe in PROBE.findall(text):
            seen.setdefault(probe, now)


def drive_elsewhere(url: str, rate: int, seconds: float) -> tuple[int, dict[str, float]]:
    """``live_latency.drive`` in a process of its own (no GIL shared with the sockets' loop)."""
    probes: dict[str, float] = {}
    return drive(url, rate, seconds, probes, threading.Event()), probes


def redis_connections(pid: int, redis_port: int) -> int:
    """TCP connections of process ``pid`` to ``redis_port`` (its sockets' inodes matched in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == redis_port and fields[3] == "01" and fields[9] in inodes:  # 01: ESTABLISHED
                count += 1
    return count


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args: argparse.Namespace, server: subprocess.Popen, cookie: str) -> dict[str, Any]:
    pages = subscriptions(args.sockets)
    began = time.monotonic()
    gate = asyncio.Semaphore(OPENING)
    results = await asyncio.gather(*(open_page(args.port, cookie, p, gate) for p in pages), return_exceptions=True)
    opened_in = time.monotonic() - began
    sockets = [s for s in results if isinstance(s, WebSocket)]
    refused = [repr(r) for r in results if not isinstance(r, WebSocket)]
    seen: list[dict[str, float]] = [{} for _ in sockets]
    counters = [[0] for _ in sockets]
    listeners = [asyncio.create_task(listen(s, seen[i], counters[i])) for i, s in enumerate(sockets)]
    cpu_before, clock_before = cpu_seconds(server.pid), time.monotonic()
    with ProcessPoolExecutor(1) as pool:
        driven, probes = await asyncio.get_running_loop().run_in_executor(
            pool, drive_elsewhere, args.redis, args.rate, args.seconds
        )
    elapsed = time.monotonic() - clock_before
    cpu = cpu_seconds(server.pid) - cpu_before
    await asyncio.sleep(2.0)  # the last probes' messages
    connections = redis_connections(server.pid, urlparse(args.redis).port or 6379)
    for task in listeners:
        task.cancel()
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
    loaded = [i for i, s in enumerate(sockets) if pages[results.index(s)] == {"scope": "queue", "queue": QUEUE}]
    latencies = [seen[i][p] - t0 for i in loaded for p, t0 in probes.items() if p in seen[i]]
    missed = [sum(1 for p in probes if p not in seen[i]) for i in loaded]
    return {
        "sockets_asked": args.sockets,
        "sockets_served": len(sockets),
        "refused": refused[:3],
        "opened_in_s": round(opened_in, 1),
        "transitions_per_second": round(driven / elapsed),
        "seconds": round(elapsed, 1),
        "probes": len(probes),
        "loaded_queue_sockets": len(loaded),
        "probe_deliveries_missed": sum(missed),
        "messages_per_socket_per_second": round(sum(c[0] for c in counters) / max(1, len(sockets)) / elapsed, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies)) if latencies else None,
            "p95": round(percentile(latencies, 95)) if latencies else None,
            "p99": round(percentile(latencies, 99)) if latencies else None,
            "max": round(max(latencies)) if latencies else None,
        },
        "console_cpu_percent_of_one_core": round(100 * cpu / elapsed),
        "console_redis_connections": connections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=1000)
    args = load_arguments(parser, redis_db=4, port=8210)
    client = Client(args.redis)
    for queue in [QUEUE, *IDLE_QUEUES]:
        client.enqueue("bench:noop", b"", queue=queue)  # the queues exist before the pages open
    client.close()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        server = start_console(args.redis, args.port, workdir)
        try:
            report = asyncio.run(run(args, server, session_cookie(args.redis, workdir)))
        finally:
            server.terminate()
            server.wait(timeout=15)
    with Inspector(args.redis) as inspector:
        for queue in [QUEUE, *IDLE_QUEUES]:
            inspector.delete_queue(queue, force=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
