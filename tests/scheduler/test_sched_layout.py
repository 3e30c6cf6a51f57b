"""The scheduler refuses a keyspace at another key layout: a round writes nothing and stops the scheduler, and the
taskscheduler process exits non-zero naming both layouts (see taskq.queues.engine.layout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from taskq.queues.engine import Keys, LayoutVersionError

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = Keys().layout


def test_a_round_on_a_newer_layout_writes_nothing_and_refuses(r, make_scheduler):
    scheduler = make_scheduler()
    scheduler.run_once()
    assert r.get(LAYOUT) == b"1" and not scheduler.layout.refused.is_set()  # stamped by the first round
    r.flushdb()
    r.set(LAYOUT, "2")
    scheduler.run_once()
    assert r.keys("*") == [LAYOUT.encode()]  # no baseline, no heartbeat
    assert scheduler.layout.refused.is_set()
    assert isinstance(scheduler.layout.refusal, LayoutVersionError) and scheduler.layout.refusal.found == 2


def test_taskscheduler_exits_non_zero_on_a_newer_layout(r, redis_url):
    r.set(LAYOUT, "2")
    done = subprocess.run(
        [sys.executable, "manage.py", "taskscheduler", "--no-admin"],
        cwd=ROOT,
        env={**os.environ, "REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "key layout 2, but this taskq reads and writes layout 1" in done.stderr
    assert r.keys("*") == [LAYOUT.encode()]
