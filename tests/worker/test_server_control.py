"""An operator quiets or stops a real worker process through Redis (``Inspector.control_server``): the request is
published on the server's control channel and acted on at once (the heartbeat reads the stored request too, as a
fallback); the server acknowledges, and the CLI waits for that. Quiet stops it fetching (what it fetched ahead
goes back to pending) while what it runs finishes; stop shuts it down gracefully (exit 0, nothing lost). A server
that ends leaves a record: how, when, and what became of each task it held, also when it was killed. Bad requests
change nothing. Nothing is timed: each step is waited for."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis
from crash_tasks import DONE_KEY
from worker_support import start_taskworker, wait_for

from taskq.queues import handles
from taskq.queues.engine import Client, Inspector, ServerNotFoundError, ValidationError
from taskq.queues.engine.keys import Keys
from tests.cli.helpers import invoke


def start(processes, redis_url: str, log: Path, *args: str, **env: str):
    return start_taskworker(
        processes, redis_url, log, "--queues", "ctl", "--import", "tests.worker.crash_tasks",
        *(args or ("--concurrency", "2")), **{"TASKS_HEARTBEAT_SECONDS": "0.2", **env},
    )  # fmt: skip


def the_server(inspector: Inspector, pid: int):
    return next((s for s in inspector.servers() if s.pid == pid), None)


def tail(log: Path) -> str:
    return log.read_text()[-3000:]


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
        wait_for(lambda: the_server(inspector, proc.pid).status == "quiet", what=f"quiet\n{tail(log)}")
        later = client.enqueue("test:record", {"sleep": 0}, queue="ctl")
        wait_for(lambda: r.sismember(DONE_KEY, long.id), timeout=30, what="the running task to finish")
        quiet = wait_for(lambda: (s := the_server(inspector, proc.pid)) and s.processed == 1 and s, what="counted")
        assert quiet.status == "quiet" and quiet.failed == 0
        assert inspector.get_task("ctl", later.id).state == "pending"  # never fetched
        assert proc.poll() is None

        inspector.control_server(server.id, "quiet")  # asked again: nothing changes
        inspector.control_server(server.id, "stop")
        assert proc.wait(30) == 0, tail(log)
        assert "an operator stopped this worker" in log.read_text()
        assert the_server(inspector, proc.pid) is None  # deregistered on the way out
        assert not r.exists(Keys().control(server.id))
        assert inspector.get_task("ctl", later.id).state == "pending"  # still there for the next worker


@pytest.mark.slow
def test_quiet_acts_at_once_a_task_enqueued_a_second_later_stays_pending_and_the_worker_stays_up(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path
):
    # A heartbeat every 20 s: what acts within the second can only be the published request, not the fallback.
    log = tmp_path / "worker.log"
    with Inspector(redis_url, actor="test") as inspector, Client(redis_url) as client:
        proc = start(processes, redis_url, log, TASKS_HEARTBEAT_SECONDS="20", TASKS_LEASE_SECONDS="120")
        server = wait_for(lambda: the_server(inspector, proc.pid), timeout=60, what="the worker's heartbeat")
        done = client.enqueue("test:record", {"sleep": 0}, queue="ctl")  # the worker fetches while active
        wait_for(lambda: r.sismember(DONE_KEY, done.id), what="a task run before the quiet")

        inspector.control_server(server.id, "quiet")
        ack = inspector.wait_for_acknowledgement(server.id, "quiet", timeout=15)
        assert ack is not None and ack.action == "quiet", tail(log)
        assert the_server(inspector, proc.pid).status == "quiet"  # written before the acknowledgement
        time.sleep(1)  # the brief's "1 s later": not a measurement, the order of events
        later = client.enqueue("test:record", {"sleep": 0}, queue="ctl")
        time.sleep(2)  # ample for an active worker, woken by the enqueue, to fetch it within milliseconds
        assert inspector.get_task("ctl", later.id).state == "pending"
        assert proc.poll() is None and the_server(inspector, proc.pid).status == "quiet"


@pytest.mark.slow
def test_quiet_gives_back_the_tasks_fetched_ahead_and_finishes_the_running_one(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path
):
    log = tmp_path / "worker.log"
    with Inspector(redis_url, actor="test") as inspector, Client(redis_url) as client:
        proc = start(processes, redis_url, log, "--concurrency", "1", "--prefetch", "5")
        server = wait_for(lambda: the_server(inspector, proc.pid), timeout=60, what="the worker's heartbeat")
        long = client.enqueue("test:record", {"sleep": 3}, queue="ctl")
        wait_for(lambda: inspector.queue_info("ctl").active == 1, what="the long task running")
        ahead = [client.enqueue("test:record", {"sleep": 0}, queue="ctl").id for _ in range(5)]
        wait_for(lambda: inspector.queue_info("ctl").active == 6, what=f"five tasks fetched ahead\n{tail(log)}")

        inspector.control_server(server.id, "quiet")
        assert inspector.wait_for_acknowledgement(server.id, "quiet", timeout=15) is not None, tail(log)
        wait_for(lambda: inspector.queue_info("ctl").pending == 5, what=f"the five back in pending\n{tail(log)}")
        assert {inspector.get_task("ctl", i).state for i in ahead} == {"pending"}
        wait_for(lambda: r.sismember(DONE_KEY, long.id), timeout=30, what="the running task to finish")
        assert not any(r.sismember(DONE_KEY, i) for i in ahead) and proc.poll() is None


@pytest.mark.slow
@pytest.mark.django_db
def test_stop_through_the_cli_waits_for_the_ack_and_the_server_leaves_a_record(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path, settings
):
    settings.REDIS_URL = redis_url
    handles.reset()
    log = tmp_path / "worker.log"
    with Inspector(redis_url, actor="test") as inspector, Client(redis_url) as client:
        proc = start(processes, redis_url, log, TASKS_SHUTDOWN_TIMEOUT="4")
        server = wait_for(lambda: the_server(inspector, proc.pid), timeout=60, what="the worker's heartbeat")
        short = client.enqueue("test:record", {"sleep": 1}, queue="ctl")  # finishes within the shutdown timeout
        long = client.enqueue("test:record", {"sleep": 60}, queue="ctl")  # requeued when it runs out
        wait_for(lambda: inspector.queue_info("ctl").active == 2, what="both tasks running")

        result = invoke("server", "stop", server.id, "--json")
        assert result.code == 0, result.err
        assert result.json()["acknowledged"] == "stop"
        assert proc.wait(30) == 0, tail(log)

        record = inspector.ended_server(server.id)
        assert (record.how, record.reason, record.server.status) == ("graceful", "stopped by an operator", "stopped")
        assert record.ended_at is not None and record.server.processed == 1
        assert {t.id: t.outcome for t in record.tasks} == {short.id: "finished", long.id: "requeued"}
        assert inspector.get_task("ctl", long.id).state == "pending"
        assert [e.id for e in inspector.ended_servers()] == [server.id]
        assert r.ttl(Keys().ended_server(server.id)) > 3000  # kept an hour (TASKS_SERVER_RECORD_SECONDS)
        # Its acknowledgement outlives it: a second stop is refused, as for any server that is not running.
        with pytest.raises(ServerNotFoundError):
            inspector.control_server(server.id, "stop")


@pytest.mark.slow
def test_a_killed_server_is_recorded_as_lost_with_the_tasks_recovered_after_their_lease(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path
):
    with Inspector(redis_url, actor="test") as inspector, Client(redis_url) as client:
        doomed = start(processes, redis_url, tmp_path / "doomed.log")
        server = wait_for(lambda: the_server(inspector, doomed.pid), timeout=60, what="the worker's heartbeat")
        tasks = [client.enqueue("test:record", {"sleep": 30}, queue="ctl").id for _ in range(2)]
        wait_for(lambda: len(the_server(inspector, doomed.pid).active) == 2, what="both tasks running, published")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)

        # Any other worker's recoverer finds the dead heartbeat, then the expired leases (2 s here).
        log = tmp_path / "rescuer.log"
        start(processes, redis_url, log)
        record = wait_for(
            lambda: (rec := ended(inspector, server.id)) and {t.outcome for t in rec.tasks} == {"recovered"} and rec,
            timeout=60,
            what=f"the lost server's record with both tasks recovered\n{tail(log)}",
        )
        assert (record.how, record.server.status, record.server.pid) == ("lost", "lost", doomed.pid)
        assert "heartbeat ran out" in record.reason and record.ended_at is not None
        assert sorted(t.id for t in record.tasks) == sorted(tasks)
        assert {t.detail for t in record.tasks} == {"to retry"}
        assert "is lost" in log.read_text()


def ended(inspector: Inspector, server_id: str):
    try:
        return inspector.ended_server(server_id)
    except ServerNotFoundError:
        return None


def test_bad_requests_change_nothing(r: redis.Redis, redis_url: str):
    with Inspector(redis_url, actor="test") as inspector:
        with pytest.raises(ServerNotFoundError, match="no running server"):
            inspector.control_server("nobody:1:abc", "stop")
        with pytest.raises(ValidationError, match="quiet, stop"):
            inspector.control_server("nobody:1:abc", "pause")
        for bad in ("", "x" * 400, "a\x00b", None, 42):
            with pytest.raises(ValidationError, match="server id"):
                inspector.control_server(bad, "stop")  # type: ignore[arg-type]
            with pytest.raises(ValidationError, match="server id"):
                inspector.ended_server(bad)  # type: ignore[arg-type]
        with pytest.raises(ServerNotFoundError, match="ended in the last hour"):
            inspector.ended_server("nobody:1:abc")
        assert inspector.wait_for_acknowledgement("nobody:1:abc", "quiet", timeout=0) is None
    assert r.keys("*control*") == [] and r.keys("*ended*") == []
