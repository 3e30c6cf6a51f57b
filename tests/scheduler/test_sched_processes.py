"""Three real ``taskscheduler`` processes on one Redis, one of them killed with SIGKILL mid-run: every tick of an
``@every 1s`` entry is enqueued exactly once, with no gap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from periodic_fixtures import EVERY_SECOND

from taskq.queues.engine.keys import Keys
from tests import waiting

pytestmark = [pytest.mark.chaos, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
Q = Keys().queue("proc")


def wait_for(condition, what=""):
    """Processes start slowly on a loaded box: a 60 s limit."""
    return waiting.wait_for(condition, timeout=60.0, interval=0.1, what=what)


def start(redis_url: str) -> subprocess.Popen:
    env = {**os.environ, "REDIS_URL": redis_url, "PYTHONPATH": f"{Path(__file__).parent}:{ROOT}"}
    return subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "taskscheduler",
            "--no-admin",
            "--import",
            "periodic_fixtures",
            "--interval",
            "0.2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_three_scheduler_processes_one_killed(redis_client, redis_url):
    history = Q.cron_history(EVERY_SECOND.id)
    processes = [start(redis_url) for _ in range(3)]
    try:
        wait_for(lambda: redis_client.zcard(history) >= 3, what="three ticks")
        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait(10)
        seen = redis_client.zcard(history)
        wait_for(lambda: redis_client.zcard(history) >= seen + 5, what="five more ticks after the kill")
    finally:
        for p in processes[1:]:
            p.send_signal(signal.SIGTERM)
        for p in processes:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    ids = [i.decode() for i in redis_client.lrange(Q.pending, 0, -1)]
    assert len(ids) == len(set(ids))  # never twice
    ticks = sorted(int(i.rsplit(":", 1)[1]) for i in ids)
    assert ticks == list(range(ticks[0], ticks[-1] + 1000, 1000))  # never a gap, the kill notwithstanding
    assert redis_client.zcard(history) == len(ids)
