"""``make run`` runs the whole stack: scripts/run-demo.sh, started as make starts it (on the test database, a
port of its own and temporary folders), brings up the console, a worker that exports events, the periodic
scheduler and the demo traffic, so the Servers, Schedulers and History pages have something to show; Ctrl-C
(SIGTERM to the group) stops every process it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.demo.demo_support import interrupt_demo, start_demo, wait_for_the_group_to_exit
from tests.ports import free_port
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
# Spark's first session takes a while on a shared machine: the rollup is waited for, not timed.
STARTUP = 240

# Each step may take up to STARTUP (240 s) on a busy machine where the suite runs two test processes at once: the
# suite's 120 s limit would cut the test short of its own waits.
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]


def cli(env: dict[str, str], *argv: str) -> object:
    done = subprocess.run(
        [sys.executable, "manage.py", "tasks", *argv, "--json"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return json.loads(done.stdout) if done.returncode == 0 else None


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_run_demo_starts_the_console_worker_scheduler_exporter_and_traffic(redis_url, redis_client, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "demo.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        "REDIS_URL": redis_url,
        "TASKS_EVENT_EXPORT_DIR": str(tmp_path / "events"),
        "TASKS_ROLLUP_DIR": str(tmp_path / "rollups"),
        "PORT": str(port),
        "PYTHON": sys.executable,
        "TASKS_SHUTDOWN_TIMEOUT": "2",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    demo = start_demo(env, tmp_path / "demo.log")
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/favicon.ico"), timeout=STARTUP, what="the console")
        wait_for(lambda: cli(env, "server", "ls"), timeout=STARTUP, what="the worker's heartbeat")
        wait_for(
            lambda: any(
                e["previous_run"] and e["type"] == "email:deliver"
                for e in (cli(env, "cron", "ls") or {"entries": []})["entries"]
            ),
            timeout=STARTUP,
            what="a tick of the demo's periodic entry",
        )
        wait_for(
            lambda: any(q["committed"] for q in (cli(env, "export", "status") or {"queues": []})["queues"]),
            timeout=STARTUP,
            what="the exporter's first events",
        )
        wait_for(lambda: list((tmp_path / "rollups").glob("day=*")), timeout=STARTUP, what="today's rollups")
    finally:
        interrupt_demo(demo, tmp_path / "demo.log")
    assert demo.returncode == 130  # run-demo.sh's answer to an interrupt: every child stopped first
    wait_for_the_group_to_exit(demo)
