"""An operator quiets or stops a real worker process through Redis (``Inspector.control_server``): quiet stops it
fetching while what it runs finishes, stop shuts it down gracefully (exit 0, nothing lost). Bad requests change
nothing. Nothing is timed: each step is waited for."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from crash_tasks import DONE_KEY
from worker_support import start_taskworker, wait_for

from queues.engine import Client, Inspector, ServerNotFoundError, ValidationError
from queues.engine.keys import Keys


def start(processes, redis_url: str, log: Path):
    return start_taskworker(
        processes, redis_url, log, "--queues", "ctl", "--concurrency", "2", "--import", "tests.worker.crash_tasks",
        TASKS_HEARTBEAT_SECONDS="0.2",
    )  # fmt: skip


def the_server(inspector: Inspector, pid: int):
    return next((s for s in inspector.servers() if s.pid == pid), None)


@pytest.mark.slow
def test_quiet_finishes_what_runs_and_fetches_nothing_more_then_stop_ends_the_process(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path
):
    log = tmp_path / "worker.log"
    with Inspector(redis_url, actor="test") as inspector, Client(redis_url) as client:
        proc = start(processes, redis_url, log)
        server = wait_for(lambda: the_server(inspector, proc.pid), timeout=60, what="the worker's heartbeat")
        assert (server.pool, server.processed, server.failed) == ("thread", 0, 0)
        long = client.enqueue("test:record", {"sleep": 1.5}, queue="ctl")
        wait_for(lambda: inspector.queue_info("ctl").active == 1, what="the long task running")

        inspector.control_server(server.id, "quiet")
        wait_for(lambda: the_server(inspector, proc.pid).status == "quiet", what=f"quiet\n{log.read_text()[-2000:]}")
        later = client.enqueue("test:record", {"sleep": 0}, queue="ctl")
        wait_for(lambda: r.sismember(DONE_KEY, long.id), timeout=30, what="the running task to finish")
        quiet = wait_for(lambda: (s := the_server(inspector, proc.pid)) and s.processed == 1 and s, what="counted")
        assert quiet.status == "quiet" and quiet.failed == 0
        assert inspector.get_task("ctl", later.id).state == "pending"  # never fetched
        assert proc.poll() is None

        inspector.control_server(server.id, "quiet")  # asked again: nothing changes
        inspector.control_server(server.id, "stop")
        assert proc.wait(30) == 0, log.read_text()[-3000:]
        assert "an operator stopped this worker" in log.read_text()
        assert the_server(inspector, proc.pid) is None  # deregistered on the way out
        assert not r.exists(Keys().control(server.id))
        assert inspector.get_task("ctl", later.id).state == "pending"  # still there for the next worker


def test_bad_requests_change_nothing(r: redis.Redis, redis_url: str):
    with Inspector(redis_url, actor="test") as inspector:
        with pytest.raises(ServerNotFoundError, match="no running server"):
            inspector.control_server("nobody:1:abc", "stop")
        with pytest.raises(ValidationError, match="quiet, stop"):
            inspector.control_server("nobody:1:abc", "pause")
    assert r.keys("*control*") == []
