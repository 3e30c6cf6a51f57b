"""Every engine operation outside the worker's loop on a real Redis Cluster: producer options, workflows, the
inspector's reads and operator actions, policies, periodic entries and the exporter's bookkeeping.

redis-py's cluster client refuses a script or a MULTI whose keys span slots before sending it, and Redis refuses
what slips through (CROSSSLOT), so each call below succeeding is the check that it stays in one slot.
"""

from __future__ import annotations

import asyncio

import pytest
from topology_support import flush_cluster

from taskq.queues.engine import AsyncClient, Client, DuplicateTaskError, Inspector, chain, parallel, sig
from taskq.queues.engine.export_store import ExportStore, Gap
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec
from taskq.queues.engine.scheduler_store import SchedulerStore

QUEUES = [f"ops{n}" for n in range(6)]


@pytest.fixture
def engine(redis_cluster: str):
    flush_cluster()
    client, inspector = Client(redis_cluster), Inspector(redis_cluster)
    yield client, inspector, redis_cluster
    client.close()
    inspector.broker.close()
    flush_cluster()


def test_producer_options_and_workflows(engine):
    client, inspector, url = engine
    infos = client.enqueue_many([("a", {"n": n}) for n in range(3)], queue="ops0")
    infos += [client.enqueue("b", b"x", queue=q, process_in=3600) for q in QUEUES[1:]]
    client.enqueue("u", b"1", queue="ops2", unique=60)
    with pytest.raises(DuplicateTaskError):
        client.enqueue("u", b"1", queue="ops2", unique=60)
    client.enqueue("agg", b"g", queue="ops3", group="daily")
    flow = client.submit(chain(sig("fetch"), parallel(sig("p1"), sig("p2")), sig("store")), queue="ops4")
    waiting = client.enqueue("after", b"", queue="ops0", after=[infos[0].id])

    assert inspector.queues() == sorted(QUEUES)
    assert [g.name for g in inspector.groups("ops3")] == ["daily"]
    assert inspector.workflow("ops4", flow.id).id == flow.id
    assert [w for w, _ in inspector.workflows("ops4")] == [flow.id]
    assert inspector.get_task("ops0", waiting.id).state == "waiting"
    assert [t.id for t in inspector.list_tasks("ops1", "scheduled")] == [infos[3].id]
    assert inspector.search_tasks("ops0", "pending", task_type="a").total == 3
    assert inspector.task_events("ops0", infos[0].id)
    assert inspector.outstanding("ops0") == 3
    assert set(inspector.type_counts_of(QUEUES)) == set(QUEUES)
    assert len(inspector.history("ops0", days=2)) == 2

    async def produce(url: str) -> list[str]:
        async with AsyncClient(url) as aclient:
            many = await aclient.enqueue_many([("x", b"1"), ("x", b"2")], queue="ops5")
            submitted = await aclient.submit(chain(sig("s1"), sig("s2")), queue="ops5")
            return [t.id for t in many] + [submitted.id]

    made = asyncio.run(produce(url))
    assert inspector.workflow("ops5", made[-1]).id == made[-1]


def test_operator_actions(engine):
    client, inspector, _ = engine
    scheduled = [client.enqueue("s", {"n": n}, queue="ops1", process_in=3600).id for n in range(4)]
    inspector.run_task("ops1", scheduled[0])
    inspector.archive_task("ops1", scheduled[1])
    inspector.delete_task("ops1", scheduled[2])
    assert [inspector.get_task("ops1", t).state for t in (scheduled[0], scheduled[1], scheduled[3])] == [
        "pending",
        "archived",
        "scheduled",
    ]
    assert inspector.run_all("ops1", "archived") == 1
    assert inspector.archive_all("ops1", "pending") == 2
    assert inspector.delete_all("ops1", "archived") == 2
    assert inspector.cancel_all("ops1") == 0
    inspector.delete_queue("ops1", force=True)
    assert "ops1" not in inspector.queues()
    assert inspector.redis_info()


def test_policies_periodic_entries_and_exporter_records(engine):
    client, inspector, _ = engine
    broker = inspector.broker
    policies = PolicyStore(broker)
    version = policies.write(PolicySet(queues={"ops0": QueueSpec("ops0", weight=3)}, unique={"mail:": 30.0}))
    assert policies.version() == version and policies.read().queues["ops0"].weight == 3
    assert inspector.queue_definition("ops0") is not None

    schedulers = SchedulerStore(broker)
    entry = make_entry("@every 60s", "tick", queue="ops2", source="admin")
    schedulers.write_config([entry])
    assert [e.id for e in schedulers.read_config()[0]] == [entry.id]
    schedulers.write_scheduler({"id": "s1", "host": "h", "pid": 1, "started": 0}, [entry], ttl=30)
    assert [s.id for s in schedulers.schedulers()] == ["s1"]
    assert schedulers.fire(entry, 120.0) == "enqueued"
    assert [e.entry.id for e in schedulers.entries()] == [entry.id]
    schedulers.clear_scheduler("s1")

    export = ExportStore(broker)
    assert export.acquire("me", 10)
    export.attach("ops2", 1000)
    entries = export.read("ops2", "0-0", 10)
    export.commit("ops2", entries[-1].stream_id)
    assert export.record_gap(Gap("ops2", "0-0", entries[-1].stream_id, 0)) == 1
    status = inspector.export_status()
    assert status.holder == "me" and [q.queue for q in status.queues] == ["ops2"]
