"""A worker refuses a keyspace stamped with another key layout (at start, and when it changes while it runs) by
exiting non-zero with a message naming both layouts, and archives a task message of a newer version with that
reason instead of running it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from worker_support import state_of, wait_for, worker_env

from taskq.queues.engine import Keys

REPO = Path(__file__).resolve().parents[2]
LAYOUT = Keys().layout


def start_worker(redis_url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "taskworker", "--queues", "default"],
        cwd=REPO,
        env=worker_env(redis_url, TASKS_HEARTBEAT_SECONDS="0.2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_worker_refuses_to_start_on_a_newer_layout(r, redis_url, processes):
    r.set(LAYOUT, "2")
    proc = start_worker(redis_url)
    processes.append(proc)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "the Redis keyspace has key layout 2, but this taskq reads and writes layout 1" in err
    assert r.keys("*") == [LAYOUT.encode()]  # nothing registered, nothing fetched
    assert r.get(LAYOUT) == b"2"


def test_running_worker_stops_when_the_keyspace_moves_to_a_newer_layout(r, redis_url, processes):
    proc = start_worker(redis_url)
    processes.append(proc)
    wait_for(lambda: r.zcard(Keys().servers), what="the worker's first heartbeat")
    assert r.get(LAYOUT) == b"1"  # the first worker on an empty keyspace stamps it
    r.set(LAYOUT, "2")  # as `tasks migrate-keys` of a newer release would
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "key layout 2, but this taskq reads and writes layout 1" in err
    assert r.zcard(Keys().servers) == 0  # it deregistered on the way out


def test_a_newer_message_version_is_archived_with_the_reason(r, make_server, client, inspector):
    info = client.enqueue("email", {"to": "ada"})
    key = Keys().queue("default").task(info.id)
    options = json.loads(r.hget(key, "msg"))
    r.hset(key, "msg", json.dumps({**options, "v": 2}))
    make_server()
    wait_for(lambda: state_of(inspector, "default", info.id) == "archived", what="the task to be archived")
    assert "task message version 2 is not one this worker reads" in inspector.get_task("default", info.id).last_error
