"""The event exporter on a real Redis: Parquet exactly once across a crash and restart, one exporter at a time,
trimming that never passes the committed offset, and gaps reported."""

from __future__ import annotations

import pytest

from taskq.queues.engine import Client, Inspector, Limits
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.export_store import ExportStore, parse_stream_id
from taskq.queues.history.event_files import read_events
from taskq.worker.event_exporter import EventExporter


@pytest.fixture
def broker(r, redis_url):
    """On the real clock, as the Clients these tests enqueue with, not on the root's fixed instant."""
    b = Broker(redis_url)
    yield b
    b.close()


def exporter(broker, tmp_path, holder="a1", **kw):
    return EventExporter(broker, str(tmp_path), holder, flush_age=0, **kw)


def stream_ids(r, queue="default"):
    return [sid.decode() for sid, _ in r.xrange(f"tq:{{{queue}}}:events")]


def test_exports_every_event_once_across_a_crash_between_write_and_commit(r, redis_url, broker, tmp_path):
    client = Client(redis_url)
    client.enqueue_many([("email", {"n": i}) for i in range(50)])
    client.enqueue_many([("sms", {"n": i}) for i in range(7)], queue="low")
    first = exporter(broker, tmp_path, batch=20)

    calls = []
    real_commit = first.store.commit

    def crash_on_second_commit(queue, stream_id):
        calls.append(queue)
        if len(calls) == 2:
            raise RuntimeError("killed between writing Parquet and committing")
        real_commit(queue, stream_id)

    first.store.commit = crash_on_second_commit
    with pytest.raises(RuntimeError):
        first.run_once()
    first.leader = False
    ExportStore(broker).release("a1")
    client.enqueue_many([("email", {"n": i}) for i in range(50, 60)])

    second = exporter(broker, tmp_path, holder="a2", batch=20)
    second.run_once()
    table = read_events(tmp_path)
    # Stream ids are unique within one stream only: two queues can hold the same id.
    exported = list(zip(table.column("queue").to_pylist(), table.column("stream_id").to_pylist(), strict=True))
    assert len(exported) == len(set(exported)), "an event was exported twice"
    expected = {("default", i) for i in stream_ids(r)} | {("low", i) for i in stream_ids(r, "low")}
    assert set(exported) == expected and len(expected) == 67
    assert ExportStore(broker).committed("default") == stream_ids(r)[-1]
    rows = table.to_pylist()
    assert {row["to_state"] for row in rows} == {"pending"} and {row["queue"] for row in rows} == {"default", "low"}
    client.close()


def test_one_exporter_at_a_time(r, redis_url, broker, tmp_path):
    Client(redis_url).enqueue("email", {})
    leader, other = exporter(broker, tmp_path / "a", "a1"), exporter(broker, tmp_path / "b", "a2")
    leader.run_once()
    other.run_once()
    assert leader.leader and not other.leader
    assert leader.exported == 1 and other.exported == 0
    leader.stop()  # releases the lease: the other takes over at its next round
    other.run_once()
    assert other.leader


def test_trimming_never_passes_the_committed_offset(r, redis_url, broker):
    limits = Limits(event_maxlen=100)
    client = Client(redis_url, limits=limits)
    client.enqueue_many([("email", {"n": i}) for i in range(1000)])
    assert r.xlen("tq:{default}:events") < 400  # no exporter: trimmed to about maxlen

    store = ExportStore(broker)
    committed = stream_ids(r)[-1]
    store.attach("default", 100_000)
    store.commit("default", committed)
    client.enqueue_many([("email", {"n": i}) for i in range(1000, 3000)])
    ids = stream_ids(r)
    assert parse_stream_id(ids[0]) <= parse_stream_id(committed)  # nothing after the committed id was trimmed
    assert len([i for i in ids if parse_stream_id(i) > parse_stream_id(committed)]) == 2000
    client.close()


def test_hard_cap_still_bounds_the_stream_and_the_gap_is_reported(r, redis_url, broker, tmp_path):
    client = Client(redis_url)
    client.enqueue_many([("email", {"n": i}) for i in range(10)])
    first = exporter(broker, tmp_path, event_cap=300)
    first.run_once()
    first.store.attach("default", 300)
    client.enqueue_many([("email", {"n": i}) for i in range(2000)])  # the exporter is not keeping up
    assert r.xlen("tq:{default}:events") < 500
    first.run_once()
    assert first.gaps == 1
    status = Inspector(redis_url).export_status()
    assert status.gaps == 1 and status.holder == "a1"
    (queue,) = status.queues
    assert queue.last_gap is not None and queue.committed == stream_ids(r)[-1] and not queue.behind
    client.close()
