"""kill -9 the Redis server itself (AOF) under a producer and a worker process, restart it on the same files, and
count what was lost: with ``appendfsync always`` no acknowledged enqueue may be lost; with ``everysec`` a loss is
allowed only among the enqueues acknowledged in the last second before the kill (plus a margin, see
FSYNC_WINDOW). Also: a Redis that refuses writes for a while (READONLY, as after a failover) stops nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis
from chaos_support import (
    RedisServer,
    completions,
    kill_process,
    logs,
    record_figures,
    scale,
    start_worker,
    wait_for,
)

from taskq.queues.engine import Client, EngineError, Inspector, RedisUnavailableError, TaskIdConflictError

pytestmark = pytest.mark.chaos

QUEUE = "outage"
TASK = "chaos:record"
# everysec fsyncs once a second, and Redis postpones a write for up to two more seconds while a slow fsync is under
# way (aof.c), so an acknowledged write may be lost if the kill comes within about a second of it, two at worst.
# A kill -9 kills the process only: what Redis wrote to the page cache survives, so the measured loss is 0.
FSYNC_WINDOW = 1.0
FSYNC_MARGIN = 1.0


def servers_up(inspector: Inspector, worker) -> bool:
    assert worker.poll() is None, f"worker {worker.pid} exited with {worker.returncode}"
    return any(s.pid == worker.pid for s in inspector.servers())


def drained(inspector: Inspector) -> bool:
    info = inspector.queue_info(QUEUE)
    return (info.pending, info.active, info.scheduled, info.retry, info.archived) == (0, 0, 0, 0, 0)


def enqueue_through_the_outage(
    client: Client, server: RedisServer, count: int, kill_at: int, restart_after: float
) -> tuple[dict[str, float], float, set[str]]:
    """Enqueue ``count`` tasks, retrying each until Redis acknowledges it; kill -9 Redis before task ``kill_at``
    and restart it ``restart_after`` seconds later. Returns each id's acknowledgement time (monotonic), the kill
    time and the ids refused at least once."""
    acknowledged: dict[str, float] = {}
    refused: set[str] = set()
    killed_at = 0.0
    restart = threading.Timer(restart_after, server.start)
    try:
        for n in range(count):
            task_id = f"task-{n:05d}"
            if n == kill_at:
                killed_at = time.monotonic()
                server.kill9()
                restart.start()
            give_up = time.monotonic() + 30
            while True:
                try:
                    client.enqueue(TASK, {"sleep": 0.002}, queue=QUEUE, task_id=task_id)
                    break
                except TaskIdConflictError:
                    break  # an earlier try landed; only its reply was lost
                except RedisUnavailableError:
                    refused.add(task_id)
                    assert time.monotonic() < give_up, f"Redis did not come back:\n{server.log()}"
                    time.sleep(0.05)
            acknowledged[task_id] = time.monotonic()
    finally:
        restart.cancel()
        if restart.is_alive():
            restart.join(30)  # a restart under way: let it finish so its server is killed at teardown
    return acknowledged, killed_at, refused


@pytest.mark.parametrize("appendfsync", ["always", "everysec"])
def test_redis_killed_and_restarted_on_aof_loses_no_acknowledged_task(appendfsync: str, tmp_path: Path):
    server = RedisServer(tmp_path / "redis", appendfsync)
    server.start()
    done_file = tmp_path / "done.txt"
    worker = start_worker(server.url, QUEUE, done_file, tmp_path / "worker.log", concurrency=10)
    client, inspector = Client(server.url), Inspector(server.url)
    try:
        wait_for(lambda: servers_up(inspector, worker), timeout=30, what="worker up")
        count = scale(1000)
        acknowledged, killed_at, refused = enqueue_through_the_outage(client, server, count, count // 2, 1.0)
        assert refused, "the producer never saw the outage"
        assert len(acknowledged) == count

        # Run everything that survived, then compare with what was acknowledged.
        wait_for(lambda: drained(inspector), timeout=60, interval=0.1, what=f"the queue drained\n{logs(tmp_path)}")
        runs = completions(done_file)
        lost = set(acknowledged) - set(runs)
        window = {i for i, at in acknowledged.items() if killed_at - FSYNC_WINDOW - FSYNC_MARGIN <= at <= killed_at}
        first_after = min(at for at in acknowledged.values() if at > killed_at)
        record_figures(
            f"Redis kill -9, appendfsync {appendfsync}",
            enqueued=count,
            completed=len(runs),
            lost=len(lost),
            duplicated=sum(n - 1 for n in runs.values()),
            acknowledged_in_window=len(window),
            recovery_s=round(first_after - killed_at, 2),
        )
        if appendfsync == "always":
            assert not lost, f"{len(lost)} acknowledged task(s) lost: {sorted(lost)[:10]}"
        else:
            assert lost <= window, f"lost outside the fsync window: {sorted(lost - window)[:10]}"
        assert set(runs) <= set(acknowledged), "a task ran that was never enqueued"

        assert worker.poll() is None, "the worker died with Redis"
        # Reconnected for real: it heartbeats to the new server and runs new work.
        wait_for(lambda: servers_up(inspector, worker), what="the worker's heartbeat after the restart")
        late = client.enqueue(TASK, {}, queue=QUEUE)
        wait_for(lambda: late.id in completions(done_file), what="a task enqueued after the outage ran")
    finally:
        client.close()
        inspector.broker.close()
        kill_process(worker)
        server.stop()


def test_a_redis_that_refuses_writes_for_a_while_does_not_stop_the_worker(tmp_path: Path):
    """READONLY replies (the server was demoted to a replica, as in a failover) are not connection errors: the
    fetch loop must keep trying and the acker must keep the outcome until writes are accepted again."""
    from taskq.queues.engine import Registry, Task, handler
    from taskq.worker.config import WorkerConfig
    from taskq.worker.server import Server

    server = RedisServer(tmp_path / "redis")
    server.start()
    registry = Registry()
    started, release, runs = threading.Event(), threading.Event(), []

    @handler("slow", registry=registry)
    def slow(task: Task) -> None:
        started.set()
        release.wait(10)
        runs.append(task.id)

    @handler("quick", registry=registry)
    def quick(task: Task) -> None:
        runs.append(task.id)

    worker = Server(
        WorkerConfig(
            redis_url=server.url,
            lease_seconds=10.0,
            heartbeat_interval=0.2,
            forwarder_interval=0.1,
            idle_wait=0.1,
            shutdown_timeout=0.5,
        ),
        registry,
    )
    client, inspector = Client(server.url), Inspector(server.url)
    r = redis.Redis.from_url(server.url)
    worker.start()
    try:
        first = client.enqueue("slow", retention=60)
        assert started.wait(10)
        r.replicaof("127.0.0.1", server.port + 1000)  # a master that is not there: read-only until promoted
        with pytest.raises(EngineError, match="read only replica"):
            client.enqueue("quick")
        time.sleep(0.5)  # the idle fetch loop meets READONLY several times (idle_wait 0.1 s)
        release.set()  # the slow task succeeds while its ack cannot be written
        wait_for(lambda: first.id in runs, what="the slow handler returned")
        time.sleep(0.3)
        r.replicaof("NO", "ONE")

        wait_for(
            lambda: inspector.get_task("default", first.id).state == "completed",
            what="the held-back ack written once Redis accepted writes",
        )
        assert inspector.get_task("default", first.id).retried == 0
        later = client.enqueue("quick")
        wait_for(lambda: later.id in runs, what="the worker still fetching after the READONLY period")
    finally:
        release.set()
        worker.stop()
        client.close()
        inspector.broker.close()
        r.close()
        server.stop()
