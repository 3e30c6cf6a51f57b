"""The engine, a real worker, the console and /metrics on a real 3-node Redis Cluster.

Queues hash to different slots (and so to different nodes); every script and every MULTI must stay in one slot,
which redis-py's cluster client enforces (it refuses a cross-slot EVALSHA or transaction before sending it), so
running the whole flow here is the check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from redis.crc import key_slot
from topology_support import CLUSTER_PORTS, completions, flush_cluster, worker_logs

from taskq.queues import handles
from taskq.queues.engine import AsyncClient, Client, Inspector, Keys, TaskIdConflictError, connect
from taskq.queues.engine.broker.connection import database_of, is_cluster
from taskq.queues.engine.events import AsyncEventStreams
from tests.console.console_support import logged_in, make_user
from tests.waiting import state_of, wait_for

QUEUES = [f"q{n}" for n in range(12)]


@pytest.fixture
def cluster(redis_cluster: str):
    flush_cluster()
    yield redis_cluster
    flush_cluster()


def node_of(conn, key: str) -> int:
    return conn.get_node_from_key(key).port


def test_queues_spread_over_nodes_and_global_keys_share_one_slot(cluster: str):
    conn = connect(cluster)
    assert is_cluster(conn) and database_of(conn) == 0
    keys = Keys(cluster=True)
    assert len({node_of(conn, keys.queue(q).pending) for q in QUEUES}) == len(CLUSTER_PORTS)
    globals_ = [
        keys.queues,
        keys.servers,
        keys.server("s"),
        keys.workers("s"),
        keys.config_queues,
        keys.config_version,
        keys.config_periodic,
        keys.schedulers,
        keys.export_lease,
    ]
    assert {key_slot(k.encode()) for k in globals_} == {key_slot(b"tq")}
    assert keys.queues == "{tq}:queues" and Keys().queues == "tq:queues"  # one server: names unchanged
    conn.close()


def test_worker_processes_queues_on_every_node(cluster: str, topology_worker, tmp_path: Path):
    client, inspector = Client(cluster), Inspector(cluster)
    try:
        topology_worker(cluster, ",".join(QUEUES))
        wait_for(lambda: inspector.servers(), timeout=30, what=f"the worker's heartbeat\n{worker_logs(tmp_path)}")
        ids = {info.id for q in QUEUES for info in client.enqueue_many([("topo:record", {})] * 5, queue=q)}
        wait_for(
            lambda: set(completions(tmp_path)) == ids,
            timeout=30,
            what=f"60 tasks of 12 queues done\n{worker_logs(tmp_path)}",
        )
        assert len(completions(tmp_path)) == len(ids)
        assert inspector.queues() == sorted(QUEUES)
        kept = client.enqueue("topo:record", {}, queue="q9", retention=60)
        assert client.wait(kept.id, queue="q9", timeout=15).state == "completed"  # a blocking XREAD on its node
        infos = inspector.queue_infos(QUEUES)
        assert [(i.pending, i.active, i.processed_total) for i in infos] == [
            (0, 0, 6 if i.queue == "q9" else 5) for i in infos
        ]

        inspector.pause_queue("q0")
        held = client.enqueue("topo:record", {}, queue="q0").id
        passed = client.enqueue("topo:record", {}, queue="q1").id
        wait_for(lambda: passed in completions(tmp_path), what="q1 still served while q0 is paused")
        assert state_of(inspector, "q0", held) == "pending" and inspector.queue_info("q0").paused
        inspector.unpause_queue("q0")
        wait_for(lambda: held in completions(tmp_path), what="q0 served again once unpaused")

        # The forwarder moves a due scheduled task; a failure is archived (scripts of the worker's other paths).
        later = client.enqueue("topo:record", {}, queue="q4", process_in=0.5).id
        failing = client.enqueue("topo:fail", {}, queue="q6").id
        wait_for(lambda: later in completions(tmp_path), what=f"the scheduled task run\n{worker_logs(tmp_path)}")
        wait_for(lambda: state_of(inspector, "q6", failing) == "archived", what="the failed task archived")

        # Cancel goes over pub/sub: published on one node, heard by the worker subscribed on another.
        running = client.enqueue("topo:sleep", {}, queue="q5").id
        wait_for(lambda: state_of(inspector, "q5", running) == "active", what="the sleeper running")
        assert inspector.cancel_task("q5", running) >= 1
        wait_for(
            lambda: "cancelled" in (inspector.get_task("q5", running).last_error or ""),
            what=f"the running task cancelled\n{worker_logs(tmp_path)}",
        )
        assert state_of(inspector, "q5", running) in ("retry", "archived")
    finally:
        client.close()
        inspector.broker.close()


def test_async_client_and_event_tail_on_a_cluster(cluster: str):
    """The console's live reader tails the streams of queues on three nodes (split reads, see engine.cluster)."""

    async def run() -> tuple[set[str], set[str], dict[str, dict[str, int]]]:
        async with AsyncClient(cluster) as client:
            streams = AsyncEventStreams(cluster)
            tail = streams.tail()
            assert await streams.read(tail, block_ms=50) == []
            ids = {(await client.enqueue("topo:record", {"n": n}, queue=q)).id for n, q in enumerate(QUEUES)}
            seen: set[str] = set()
            deadline = asyncio.get_running_loop().time() + 15
            while seen != ids and asyncio.get_running_loop().time() < deadline:
                seen |= {event.task_id for event in await streams.read(tail, block_ms=100)}
                await asyncio.sleep(0.05)  # the tail lists new queues about once a second
            counts = await streams.counts(QUEUES)
            await streams.close()
            return ids, seen, counts

    ids, seen, counts = asyncio.run(run())
    assert seen == ids
    assert {q: (c["pending"], c["size"]) for q, c in counts.items()} == {q: (1, 1) for q in QUEUES}


def test_console_pages_and_metrics_on_a_cluster(cluster: str, settings, db):
    settings.REDIS_URL = cluster
    handles.reset()
    try:
        client = Client(cluster)
        task = client.enqueue("topo:record", {"x": 1}, queue="q3")
        client.enqueue("topo:record", {}, queue="q7", process_in=3600)
        client.close()
        browser = logged_in(make_user("ops", "view_console", "operate_console"))
        for path in (
            "/",
            "/servers/",
            "/redis/",
            "/schedulers/",
            "/queues/q3/",
            f"/queues/q3/tasks/{task.id}/",
            "/queues/q7/?state=scheduled",
        ):
            response = browser.get(path)
            assert response.status_code == 200, (path, response.content[:500])
        assert task.id.encode() in browser.get("/queues/q3/?state=pending").content
        assert browser.post("/queues/q7/pause/").status_code in (200, 302)
        assert Inspector(cluster).queue_info("q7").paused

        response = browser.get("/metrics")
        assert response.status_code == 200
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.content.decode())
            for s in family.samples
        }
        assert samples[("taskq_tasks", (("queue", "q3"), ("state", "pending")))] == 1
        assert samples[("taskq_tasks", (("queue", "q7"), ("state", "scheduled")))] == 1
        assert samples[("taskq_queue_paused", (("queue", "q7"),))] == 1
    finally:
        handles.reset()


def test_a_cross_slot_transaction_is_refused_so_the_checks_above_mean_something(cluster: str):
    conn = connect(cluster)
    pipe = conn.pipeline(transaction=True)
    pipe.set(Keys().queue("q0").pending + ":x", 1)
    pipe.set(Keys().queue("q1").pending + ":x", 1)
    with pytest.raises(redis.RedisClusterException):
        pipe.execute()
    conn.close()


def test_wait_replicas_waits_on_the_masters_of_the_slots(cluster: str):
    """This cluster's masters have no replica: with wait_replicas=1 each enqueue is applied on its slot's master,
    then WAIT (sent to that master, on the same connection) confirms 0 replicas, so the producer hears that a
    failover could lose it, for queues on every node. Without it, the same enqueues are acknowledged."""
    import asyncio

    from taskq.queues.engine import AsyncClient, RedisUnavailableError, ValidationError

    with Client(f"{cluster}?wait_replicas=1&wait_timeout=50") as waiting, Client(cluster) as plain:
        for queue in QUEUES:
            with pytest.raises(RedisUnavailableError, match="confirmed by 0 of 1 replica"):
                waiting.enqueue("t", b"", queue=queue, task_id="w1")
            with pytest.raises(TaskIdConflictError):  # it was applied: a retry with the same id finds it
                plain.enqueue("t", b"", queue=queue, task_id="w1")
    with pytest.raises(ValidationError, match="blocking Client"):
        asyncio.run(AsyncClient(f"{cluster}?wait_replicas=1").close())
