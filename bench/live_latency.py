"""Live console latency: how long until a transition is visible in an open browser page, under load.

    python bench/live_latency.py [--rate 1000] [--seconds 30] [--redis redis://127.0.0.1:6379/5] [--port 8302]

What it does:
- starts the console under daphne (ASGI) on --port with a throwaway SQLite database and a viewer account;
- opens the queue page of ``bench-live`` (pending tab) in headless Chromium (Debian's chromium + chromedriver)
  and installs a JS hook on ``window.taskqLive.onmessage`` that records, per probe task id, the browser's
  ``Date.now()`` right after live.js applied the message to the DOM;
- drives ``--rate`` transitions per second through the engine (enqueue, dequeue, done, in ~10 ms slices:
  a third of the events each) in queue ``bench-live``, for ``--seconds``;
- every 100 ms one of the enqueues is a probe with a known id; its latency is the time from just before its
  enqueue call (wall clock, same host as the browser) to the browser having applied the message that lists it.

Reports p50/p95/p99/max, the transitions actually driven per second, and the WebSocket messages the page got.
Only the given Redis database is written (DB 0 and 10-15 are refused); the queue is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from taskq.queues.engine import Client, Inspector  # noqa: E402
from taskq.queues.engine.broker import Broker  # noqa: E402
from tests.ports import accepting  # noqa: E402

QUEUE = "bench-live"
USER, PASSWORD = "bench", "bench-live-password"
SLICE = 0.010


def _refuse_shared_db(url: str) -> None:
    import redis

    db = int(redis.connection.parse_url(url).get("db", 0) or 0)
    if db == 0 or db >= 10:
        sys.exit(f"refusing Redis DB {db}: use a scratch database (1-9)")


def console_env(url: str, workdir: Path) -> dict[str, str]:
    """The environment of the bench console: the given Redis, a throwaway SQLite database in ``workdir``."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
        "REDIS_URL": url,
        "DATABASE_URL": f"sqlite:///{workdir / 'console.sqlite3'}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
    }


def start_console(url: str, port: int, workdir: Path) -> subprocess.Popen:
    env = console_env(url, workdir)
    manage = [sys.executable, "manage.py"]
    subprocess.run(manage + ["migrate", "-v", "0"], cwd=REPO, env=env, check=True)
    subprocess.run(
        manage
        + [
            "shell",
            "-c",
            "from django.contrib.auth.models import Permission, User; "
            f"u = User.objects.create_user({USER!r}, password={PASSWORD!r}); "
            "u.user_permissions.add(Permission.objects.get(codename='view_console'))",
        ],
        cwd=REPO,
        env=env,
        check=True,
    )
    return serve_console(env, port, workdir)


def serve_console(env: dict[str, str], port: int, workdir: Path) -> subprocess.Popen:
    """daphne serving the console on 127.0.0.1:``port``, its log in ``workdir``, once it accepts connections.
    A listen backlog of 1024, not daphne's 50: a bench's clients connect by the hundred at once, and a busy
    machine resets some of them before daphne accepts them."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-e",
            f"tcp:{port}:interface=127.0.0.1:backlog=1024",
            "taskq.console.asgi:application",
        ],
        cwd=REPO,
        env=env,
        stdout=open(workdir / "daphne.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    if not accepting(server, port, 30):
        sys.exit((workdir / "daphne.log").read_text())
    return server


def open_browser(base: str, workdir: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={workdir / 'profile'}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    browser.get(f"{base}/accounts/login/?next=/queues/{QUEUE}/%3Fstate%3Dpending")
    browser.find_element(By.NAME, "username").send_keys(USER)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form[action*='login'] button[type=submit]").click()
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live"
    )
    browser.execute_script("""
        window.benchSeen = {}; window.benchMessages = 0;
        window.taskqLive.onmessage = function (data) {
          var now = Date.now(); window.benchMessages += 1;
          (data.tasks || []).forEach(function (t) {
            if (t.id.indexOf('probe-') === 0 && !(t.id in window.benchSeen)) { window.benchSeen[t.id] = now; }
          });
        };""")
    return browser


def drive(url: str, rate: int, seconds: float, probes: dict[str, float], stop: threading.Event) -> int:
    """Transitions at ``rate``/s in 10 ms slices; returns how many were driven."""
    client, broker = Client(url), Broker(url)
    ops = broker.transitions
    per_slice = max(1, round(rate * SLICE / 3))  # enqueues, dequeues and dones per slice
    slice_seconds = 3 * per_slice / rate  # so the slices add up to ``rate`` exactly
    total, next_probe, start = 0, time.monotonic(), time.monotonic()
    tick = start
    while not stop.is_set() and time.monotonic() - start < seconds:
        items = [("bench:noop", b"")] * per_slice
        if time.monotonic() >= next_probe:
            probe = f"probe-{uuid.uuid4().hex[:12]}"
            probes[probe] = time.time() * 1000
            client.enqueue("bench:probe", b"", queue=QUEUE, task_id=probe)
            total += 1
            items = items[1:]
            next_probe += 0.1
        total += len(client.enqueue_many(items, queue=QUEUE))
        leased = broker.run(ops.dequeue(QUEUE, per_slice, 60, "bench-worker", "tok-"))
        total += len(leased)
        if leased:
            broker.run(ops.done(QUEUE, [(t.id, t.token) for t in leased], "bench-worker"))
            total += len(leased)
        tick += slice_seconds
        time.sleep(max(0.0, tick - time.monotonic()))
    client.close()
    broker.close()
    return total


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def load_arguments(parser: argparse.ArgumentParser, redis_db: int, port: int) -> argparse.Namespace:
    """The options of a live-console bench under load (rate, length, its Redis and its console's port), parsed
    and checked: the Redis database must not be one that others use."""
    parser.add_argument("--rate", type=int, default=1000, help="transitions per second (default 1000)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", f"redis://127.0.0.1:6379/{redis_db}"))
    parser.add_argument("--port", type=int, default=port)
    args = parser.parse_args()
    _refuse_shared_db(args.redis)
    return args


def main() -> None:
    args = load_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), redis_db=5, port=8302)
    Client(args.redis).enqueue("bench:noop", b"", queue=QUEUE)  # the queue exists before the page opens
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        server = start_console(args.redis, args.port, workdir)
        browser = None
        try:
            browser = open_browser(f"http://127.0.0.1:{args.port}", workdir)
            probes: dict[str, float] = {}
            stop = threading.Event()
            began = time.monotonic()
            driven = drive(args.redis, args.rate, args.seconds, probes, stop)
            elapsed = time.monotonic() - began
            time.sleep(2.0)  # let the last probes arrive
            seen = browser.execute_script("return window.benchSeen")
            messages = browser.execute_script("return window.benchMessages")
        finally:
            if browser is not None:
                browser.quit()
            server.terminate()
            server.wait(timeout=15)
    latencies = [seen[p] - t0 for p, t0 in probes.items() if p in seen]
    Inspector(args.redis).delete_queue(QUEUE, force=True)
    report = {
        "transitions_per_second": round(driven / elapsed),
        "seconds": round(elapsed, 1),
        "probes": len(probes),
        "probes_seen": len(latencies),
        "page_messages": messages,
        "page_messages_per_second": round(messages / elapsed, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies)) if latencies else None,
            "p95": round(percentile(latencies, 95)) if latencies else None,
            "p99": round(percentile(latencies, 99)) if latencies else None,
            "max": round(max(latencies)) if latencies else None,
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
