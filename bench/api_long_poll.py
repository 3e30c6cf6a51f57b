"""Many consumers long-polling the HTTP API of one console process: errors, refusals and throughput.

    python bench/api_long_poll.py [--consumers 500] [--tasks 5000] [--timeout 2] [--max-waiters 512]
                                  [--port 8221] [--redis redis://127.0.0.1:6379/4]

What it does:
- starts ONE console process under daphne (ASGI) on --port, with a throwaway SQLite database, an API token and
  ``TASKS_API_MAX_WAITERS`` = --max-waiters;
- enqueues half of --tasks into ``bench-poll`` before the consumers start and the other half while they poll,
  from a producer thread of this process (engine ``Client``, not the API: the API serves the consumers alone);
- runs --consumers threads here, each with its own keep-alive HTTP connection, that loop: ``POST /consume``
  (``timeout`` --timeout, ``count`` 1), then ``POST .../ack`` of the task it got; a 429 (over
  ``TASKS_API_MAX_WAITERS``) is answered by polling again after its ``Retry-After``; once every task is acked,
  each consumer's next empty poll ends it.

Reports (JSON): how many consumes ran and how each ended (with a task, empty, refused with 429, or an error: any
other status or a broken connection), the acks and any duplicate delivery or task left over, the throughput
(tasks acked per second, from the first consume to the last ack), the console's CPU (user + system, /proc) and its
Redis connections (sampled every 0.5 s from /proc, the most seen). Exits 1 when any consume or ack failed or a
task was lost, delivered twice or left in the queue. Only the given Redis database is written (DB 0 and 10-15 are
refused).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import checked_url, connect, flush  # noqa: E402
from bench.live_latency import console_env, serve_console  # noqa: E402
from bench.live_sockets import cpu_seconds, redis_connections  # noqa: E402
from taskq.queues.engine import Client, Inspector  # noqa: E402

QUEUE = "bench-poll"


class Consumer(threading.Thread):
    """One HTTP consumer on a keep-alive connection of its own."""

    def __init__(self, run: Run) -> None:
        super().__init__(daemon=True)
        self.run_state = run
        self.conn: http.client.HTTPConnection | None = None

    def call(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        state = self.run_state
        for attempt in (1, 2):  # a keep-alive connection the server closed is opened again, once
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", state.port, timeout=120)
            try:
                self.conn.request("POST", path, json.dumps(body), state.headers)
                response = self.conn.getresponse()
                raw = response.read()
                return response.status, dict(response.getheaders()), (json.loads(raw) if raw else None)
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def run(self) -> None:
        state = self.run_state
        body = {"queues": [QUEUE], "timeout": state.timeout, "count": 1}
        while True:
            try:
                status, headers, doc = self.call("/api/v1/consume", body)
            except (OSError, http.client.HTTPException) as exc:
                state.note("error", f"consume: {exc!r}")
                return
            if status == 429:
                state.note("refused")
                time.sleep(int(headers.get("Retry-After", "1")))
                continue
            if status != 200:
                state.note("error", f"consume {status}: {doc}")
                return
            if not doc["tasks"]:
                state.note("empty")
                if state.done.is_set():
                    return
                continue
            state.note("delivered")
            for task in doc["tasks"]:
                self.ack(task)

    def ack(self, task: dict[str, Any]) -> None:
        state = self.run_state
        path = f"/api/v1/queues/{QUEUE}/tasks/{task['id_segment']}/ack"
        try:
            status, _, doc = self.call(path, {"lease": task["lease"]})
        except (OSError, http.client.HTTPException) as exc:
            state.note("ack_error", f"ack: {exc!r}")
            return
        if status != 204:
            state.note("ack_error", f"ack {status}: {doc}")
            return
        state.acked_one(task["id"])


class Run:
    """What the consumers share: where to call, and the counts they keep."""

    def __init__(self, port: int, token: str, timeout: float, tasks: int) -> None:
        self.port, self.timeout, self.tasks = port, timeout, tasks
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.acked: Counter[str] = Counter()
        self.errors: list[str] = []
        self.done = threading.Event()
        self.last_ack = 0.0

    def note(self, outcome: str, error: str = "") -> None:
        with self.lock:
            self.counts[outcome] += 1
            if error and len(self.errors) < 20:
                self.errors.append(error)

    def acked_one(self, task_id: str) -> None:
        with self.lock:
            self.acked[task_id] += 1
            self.last_ack = time.monotonic()
            if len(self.acked) >= self.tasks:
                self.done.set()


def start_console(url: str, port: int, workdir: Path, max_waiters: int) -> tuple[subprocess.Popen[bytes], str]:
    env = {**console_env(url, workdir), "TASKS_API_MAX_WAITERS": str(max_waiters)}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
    created = subprocess.run(
        [*manage, "tasks", "token", "create", "--name", "bench-poll", "--queues", QUEUE, "--json"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    server = serve_console(env, port, workdir)
    return server, json.loads(created.stdout)["token"]


def produce(url: str, tasks: int) -> None:
    with Client(url) as client:
        for i in range(tasks):
            client.enqueue("bench:poll", b"", queue=QUEUE, task_id=f"poll-{i}")


def measure(args: argparse.Namespace, server: subprocess.Popen[bytes], token: str) -> dict[str, Any]:
    run = Run(args.port, token, args.timeout, args.tasks)
    produce(args.redis, args.tasks // 2)
    consumers = [Consumer(run) for _ in range(args.consumers)]
    connections = [0]
    stop_sampling = threading.Event()

    def sample() -> None:
        redis_port = urlparse(args.redis).port or 6379
        while not stop_sampling.wait(0.5):
            connections[0] = max(connections[0], redis_connections(server.pid, redis_port))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_before = cpu_seconds(server.pid)
    began = time.monotonic()
    for consumer in consumers:
        consumer.start()
    with Client(args.redis) as client:
        for i in range(args.tasks // 2, args.tasks):
            client.enqueue("bench:poll", b"", queue=QUEUE, task_id=f"poll-{i}")
    if not run.done.wait(args.max_seconds):
        run.note("error", f"not every task was acked within {args.max_seconds} s")
        run.done.set()
    for consumer in consumers:
        consumer.join()
    cpu = cpu_seconds(server.pid) - cpu_before
    stop_sampling.set()
    sampler.join()
    seconds = (run.last_ack or time.monotonic()) - began
    left = Inspector(args.redis).queue_info(QUEUE).size
    consumes = sum(run.counts[k] for k in ("delivered", "empty", "refused", "error"))
    return {
        "consumers": args.consumers,
        "timeout": args.timeout,
        "max_waiters": args.max_waiters,
        "tasks": args.tasks,
        "consumes": consumes,
        "delivered": run.counts["delivered"],
        "empty": run.counts["empty"],
        "refused_429": run.counts["refused"],
        "errors": run.counts["error"] + run.counts["ack_error"],
        "acked": sum(run.acked.values()),
        "duplicates": sum(n - 1 for n in run.acked.values() if n > 1),
        "lost": args.tasks - len(run.acked),
        "left_in_queue": left,
        "seconds": round(seconds, 2),
        "tasks_per_s": round(len(run.acked) / seconds, 1) if seconds > 0 else None,
        "consumes_per_s": round(consumes / seconds, 1) if seconds > 0 else None,
        "console_cpu_percent_of_one_core": round(100 * cpu / seconds, 1) if seconds > 0 else None,
        "console_redis_connections_max": connections[0],
        "first_errors": run.errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=500)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=2.0, help="each consume's long-poll timeout, seconds")
    parser.add_argument("--max-waiters", type=int, default=512, help="the console's TASKS_API_MAX_WAITERS")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="give up (and fail) after this long")
    parser.add_argument("--port", type=int, default=8221)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/4"))
    args = parser.parse_args()
    args.redis = checked_url(args.redis)
    flush(connect(args.redis))
    with tempfile.TemporaryDirectory() as tmp:
        server, token = start_console(args.redis, args.port, Path(tmp), args.max_waiters)
        try:
            report = measure(args, server, token)
        finally:
            server.terminate()
            server.wait(timeout=30)
    flush(connect(args.redis))
    print(json.dumps(report, indent=2))
    if report["errors"] or report["lost"] or report["duplicates"] or report["left_in_queue"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
