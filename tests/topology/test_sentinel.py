"""The engine, a real worker, the console and /metrics through three real sentinels; then a failover under load.

The failover test kills the master with SIGKILL while a producer enqueues and a worker processes, and counts:
acknowledged enqueues, completed tasks, tasks lost (acknowledged, never completed, found nowhere) and tasks run
twice. Replication from master to replica is asynchronous, so a write acknowledged by the master in the last
moments before the kill may never reach the replica that takes over: the test reports that loss (docs/operations.md,
"Redis Sentinel and Cluster") and asserts only what is guaranteed: the system recovers on the new master by itself.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from topology_support import (
    MASTER_PORT,
    REPLICA_PORT,
    SentinelTopology,
    completions,
    drained_outcomes,
    first_completion_of,
    record_failover,
    task_exists,
    worker_logs,
)

from taskq.queues import handles
from taskq.queues.engine import (
    AsyncClient,
    Client,
    Inspector,
    Keys,
    RedisUnavailableError,
    TaskIdConflictError,
    connect,
)
from taskq.queues.engine.broker.connection import database_of
from taskq.queues.engine.events import AsyncEventStreams
from tests.console.console_support import logged_in, make_user
from tests.waiting import state_of, wait_for

QUEUES = ["alpha", "beta", "gamma"]
FAILOVER_TASKS = 600
KILL_AT = 200  # the master is killed once this many enqueues were acknowledged


def test_basics_through_sentinels(sentinel_topology: SentinelTopology, topology_worker, tmp_path: Path, settings, db):
    url = sentinel_topology.url
    conn = connect(url)
    conn.flushdb()
    assert database_of(conn) == 0 and conn.connection_pool.service_name == "taskq"
    client, inspector = Client(url), Inspector(url)
    try:
        topology_worker(url, ",".join(QUEUES))
        wait_for(lambda: inspector.servers(), timeout=30, what=f"the worker's heartbeat\n{worker_logs(tmp_path)}")
        ids = {info.id for q in QUEUES for info in client.enqueue_many([("topo:record", {})] * 5, queue=q)}
        wait_for(lambda: set(completions(tmp_path)) == ids, timeout=30, what=f"15 tasks done\n{worker_logs(tmp_path)}")
        assert inspector.queues() == sorted(QUEUES)

        inspector.pause_queue("alpha")
        held = client.enqueue("topo:record", {}, queue="alpha").id
        running = client.enqueue("topo:sleep", {}, queue="beta").id
        wait_for(lambda: state_of(inspector, "beta", running) == "active", what="the sleeper running")
        assert state_of(inspector, "alpha", held) == "pending"
        assert inspector.cancel_task("beta", running) >= 1
        wait_for(
            lambda: "cancelled" in (inspector.get_task("beta", running).last_error or ""),
            what=f"the running task cancelled\n{worker_logs(tmp_path)}",
        )

        settings.REDIS_URL = url
        handles.reset()
        browser = logged_in(make_user("ops", "view_console"))
        for path in ("/", "/servers/", "/redis/", "/queues/alpha/?state=pending"):
            assert browser.get(path).status_code == 200, path
        assert held.encode() in browser.get("/queues/alpha/?state=pending").content
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(browser.get("/metrics").content.decode())
            for s in f.samples
        }
        assert samples[("taskq_queue_paused", (("queue", "alpha"),))] == 1
        assert samples[("taskq_tasks", (("queue", "alpha"), ("state", "pending")))] == 1
        inspector.unpause_queue("alpha")
        wait_for(lambda: held in completions(tmp_path), what="alpha served again once unpaused")
    finally:
        handles.reset()
        client.close()
        inspector.broker.close()
        conn.close()


def test_wait_replicas_acknowledges_only_what_the_replicas_confirmed(sentinel_topology: SentinelTopology):
    """One replica runs: wait_replicas=1 acknowledges (the replica has the task), wait_replicas=2 cannot be met and
    says so, blocking and asyncio alike; the task it names stays on the master (the reply tells to retry)."""
    url = sentinel_topology.url
    sentinel_topology.ensure_replica()
    connect(url).flushdb()
    replica = redis.Redis(port=next(p for p in (MASTER_PORT, REPLICA_PORT) if p != sentinel_topology.master_port()))
    with Client(f"{url}?wait_replicas=1") as confirmed:
        task = confirmed.enqueue("topo:record", {}, queue="alpha")
    assert replica.exists(Keys().queue("alpha").task(task.id))  # on the replica when enqueue returned
    with Client(f"{url}?wait_replicas=2&wait_timeout=100") as impossible:
        with pytest.raises(RedisUnavailableError, match="confirmed by 1 of 2 replica"):
            impossible.enqueue("topo:record", {}, queue="alpha", task_id="unconfirmed")
        with pytest.raises(TaskIdConflictError):
            impossible.enqueue("topo:record", {}, queue="alpha", task_id="unconfirmed")

    async def enqueue_async() -> None:
        async with AsyncClient(f"{url}?wait_replicas=2&wait_timeout=100") as aclient:
            await aclient.enqueue("topo:record", {}, queue="alpha", task_id="async-unconfirmed")

    with pytest.raises(RedisUnavailableError, match="confirmed by 1 of 2 replica"):
        asyncio.run(enqueue_async())
    replica.close()


def test_async_client_and_event_tail_through_sentinels(sentinel_topology: SentinelTopology):
    """The asyncio side (AsyncClient, the live console's stream reader) finds the master through the sentinels."""
    url = sentinel_topology.url
    connect(url).flushdb()

    async def run() -> tuple[set[str], set[str]]:
        streams = AsyncEventStreams(url)
        tail = streams.tail()
        async with AsyncClient(url) as client:
            await client.enqueue("topo:record", {}, queue="alpha")  # the queue exists before the tail starts
            assert await streams.read(tail, block_ms=50) == []
            ids = {(await client.enqueue("topo:record", {"n": n}, queue="alpha")).id for n in range(3)}
        seen: set[str] = set()
        deadline = asyncio.get_running_loop().time() + 15
        while seen != ids and asyncio.get_running_loop().time() < deadline:
            seen |= {event.task_id for event in await streams.read(tail, block_ms=200)}
        await streams.close()
        return ids, seen

    ids, seen = asyncio.run(run())
    assert seen == ids


@dataclass
class Run:
    acknowledged: dict[str, float] = field(default_factory=dict)  # id -> when enqueue returned (epoch)
    unacknowledged: set[str] = field(default_factory=set)  # landed (a retry met TaskIdConflictError), never confirmed
    killed_at: float = 0.0
    back_at: float = 0.0  # the first acknowledgement after the kill
    promoted_at: float = 0.0  # when the sentinels named the new master
    replica_back_at: float = 0.0  # when the dead server was back as a replica every sentinel counts


def enqueue_through_failover(client: Client, topo: SentinelTopology) -> Run:
    """Enqueue FAILOVER_TASKS tasks, each retried until it is acknowledged or found there already; SIGKILL the
    master before task KILL_AT, and bring the dead server back as a replica once the sentinels promoted the other,
    as an operator (or systemd) would."""
    run = Run()
    with ThreadPoolExecutor(1) as restarter:
        restarted = None
        for n in range(FAILOVER_TASKS):
            task_id = f"f{n:05d}"
            if n == KILL_AT:
                run.killed_at = time.time()
                dead = topo.kill_master()
                restarted = restarter.submit(_restart_after_promotion, topo, dead)
            give_up = time.monotonic() + 45
            while True:
                try:
                    client.enqueue("topo:record", {}, queue=QUEUES[n % 3], task_id=task_id)
                    run.acknowledged[task_id] = time.time()
                    break
                except TaskIdConflictError:
                    run.unacknowledged.add(task_id)  # an earlier try landed, but its reply was lost or not confirmed
                    break
                except RedisUnavailableError:
                    assert time.monotonic() < give_up, "no master (or no confirming replica) within 45 s"
                    time.sleep(0.05)
            if n == KILL_AT:
                run.back_at = run.acknowledged.get(task_id, time.time())
        assert restarted is not None
        run.promoted_at, run.replica_back_at = restarted.result()
    return run


def _restart_after_promotion(topo: SentinelTopology, dead: int) -> tuple[float, float]:
    wait_for(lambda: topo.master_port() != dead, timeout=30, interval=0.05, what="a replica promoted")
    promoted_at = time.time()
    topo.ensure_replica()
    return promoted_at, time.time()


@pytest.mark.chaos
@pytest.mark.parametrize("wait_replicas", [0, 1], ids=["async-replication", "wait_replicas=1"])
def test_failover_under_load(sentinel_topology: SentinelTopology, topology_worker, tmp_path: Path, wait_replicas: int):
    """The producer's URL asks for ``wait_replicas``: 0 acknowledges on the master's word (asynchronous replication,
    a loss is possible and is measured); 1 acknowledges only once the replica has the enqueue, so the replica that
    takes over has every acknowledged task: none may be lost."""
    url = sentinel_topology.url
    sentinel_topology.ensure_replica()  # the previous case's failover left one server dead
    connect(url).flushdb()
    producer_url = f"{url}?wait_replicas={wait_replicas}" if wait_replicas else url
    client, inspector = Client(producer_url), Inspector(url)
    try:
        topology_worker(url, ",".join(QUEUES), concurrency=8)
        wait_for(lambda: inspector.servers(), timeout=30, what=f"the worker's heartbeat\n{worker_logs(tmp_path)}")
        old_master = sentinel_topology.master_port()

        run = enqueue_through_failover(client, sentinel_topology)
        acknowledged, killed_at, back_at = run.acknowledged, run.killed_at, run.back_at
        assert sentinel_topology.master_port() != old_master

        out = drained_outcomes(inspector, QUEUES, acknowledged, tmp_path, timeout=40)
        runs, completed, lost = out.runs, out.completed, out.lost
        unacknowledged_lost = {t for t in run.unacknowledged if t not in runs and not task_exists(inspector, QUEUES, t)}
        after_kill = {t for t, at in acknowledged.items() if at >= back_at}
        duplicated = {t for t, n in runs.items() if n > 1}
        figures = {
            "wait_replicas": wait_replicas,
            "enqueued": FAILOVER_TASKS,
            "acknowledged": len(acknowledged),
            "completed": len(completed),
            "lost": len(lost),
            "left_in_redis": len(out.present),
            "unacknowledged": len(run.unacknowledged),
            "unacknowledged_lost": len(unacknowledged_lost),
            "duplicated": len(duplicated),
            "promotion_seconds": round(run.promoted_at - killed_at, 2),
            "enqueue_recovery_seconds": round(back_at - killed_at, 2),
            "processing_recovery_seconds": round(first_completion_of(tmp_path, after_kill) - killed_at, 2),
            "replica_back_seconds": round(run.replica_back_at - killed_at, 2),
        }
        record_failover("Redis Sentinel failover", figures)

        # What is guaranteed: a new master was elected and the system went on by itself, the producer's enqueues
        # after the kill were acknowledged by it and the worker that lived through the failover ran them.
        assert len(after_kill) >= FAILOVER_TASKS - KILL_AT - len(run.unacknowledged)
        assert after_kill <= completed, f"{len(after_kill - completed)} post-failover tasks never ran"
        # A loss is possible only for writes acknowledged before the kill, and never once the replica confirmed them.
        assert all(acknowledged[t] <= killed_at for t in lost)
        if wait_replicas:
            assert not lost, f"acknowledged after WAIT, yet lost: {sorted(lost)[:10]}"
    finally:
        client.close()
        inspector.broker.close()
