"""The records of ended servers (``WorkerStore`` writes them, ``Inspector`` reads them), on an injected clock:
a server whose heartbeat ran out is recorded as lost once, with the tasks it was running, however many
recoverers look; a recovered task joins the record of the server its lease token names, and a lease of no server
(the HTTP API's) joins none; a graceful exit replaces a "lost" record; a server running again is not listed as
ended; every record expires after ``keep``."""

from __future__ import annotations

import pytest

from taskq.queues.engine import ServerNotFoundError
from taskq.queues.engine.keys import Keys
from taskq.queues.engine.worker_store import WorkerStore

KEEP = 3600.0
SERVER = {"id": "host-1:42:abcd", "host": "host-1", "pid": 42, "started": 1_699_999_990_000, "status": "active",
          "queues": {"default": 1}, "concurrency": 4}  # fmt: skip
RUNNING = {"t1": {"id": "t1", "type": "email:deliver", "queue": "default", "started": 1_699_999_995_000}}


@pytest.fixture
def store(broker) -> WorkerStore:
    return WorkerStore(broker)


def recovered(task_id: str) -> dict:
    return {"queue": "default", "id": task_id, "type": "email:deliver", "outcome": "recovered", "detail": "to retry",
            "at": 1_700_000_030_000}  # fmt: skip


def test_a_lost_server_is_recorded_once_with_what_it_ran_then_with_each_task_recovered(store, inspector, clock, r):
    store.write_server(SERVER, RUNNING, ttl=3, keep=KEEP)
    assert store.record_lost_servers(KEEP) == []  # its heartbeat is current
    clock.advance(4)
    assert store.record_lost_servers(KEEP) == [SERVER["id"]]
    assert store.record_lost_servers(KEEP) == []  # another recoverer, or the next round: recorded already
    [record] = inspector.ended_servers()
    assert (record.id, record.how, record.server.status, record.server.pid) == (SERVER["id"], "lost", "lost", 42)
    assert [(t.id, t.outcome) for t in record.tasks] == [("t1", "running")]
    assert record.ended_at is not None and record.ended_at.timestamp() == 1_700_000_003

    assert store.note_recovered(SERVER["id"], recovered("t1"), KEEP)
    assert store.note_recovered(SERVER["id"], recovered("t2"), KEEP)  # fetched ahead: never published as running
    assert not store.note_recovered("api-consumer", recovered("t3"), KEEP)  # no server of that id ended
    tasks = inspector.ended_server(SERVER["id"]).tasks
    assert [(t.id, t.outcome, t.detail) for t in tasks] == [
        ("t1", "recovered", "to retry"),
        ("t2", "recovered", "to retry"),
    ]
    assert not r.exists(Keys().ended_server("api-consumer"))
    assert 3500 < r.ttl(Keys().ended_server(SERVER["id"])) <= 3600


def test_a_graceful_exit_replaces_a_lost_record_and_a_running_server_is_not_listed_as_ended(store, inspector, clock):
    store.write_server(SERVER, RUNNING, ttl=3, keep=KEEP)
    clock.advance(4)
    store.record_lost_servers(KEEP)
    store.write_server(SERVER, RUNNING, ttl=3, keep=KEEP)  # it was only cut off, and came back
    assert inspector.ended_servers() == [] and inspector.server(SERVER["id"]).status == "active"

    farewell = {
        **SERVER,
        "status": "stopped",
        "how": "graceful",
        "reason": "SIGTERM or SIGINT",
        "ended": 1_700_000_005_000,
    }
    task = {"queue": "default", "id": "t1", "type": "email:deliver", "outcome": "finished", "at": 1_700_000_005_000}
    store.clear_server(SERVER["id"], {"server": farewell, "tasks": [task]}, keep=KEEP)
    record = inspector.ended_server(SERVER["id"])
    assert (record.how, record.reason, [(t.id, t.outcome) for t in record.tasks]) == (
        "graceful",
        "SIGTERM or SIGINT",
        [("t1", "finished")],
    )
    with pytest.raises(ServerNotFoundError):
        inspector.server(SERVER["id"])


def test_a_record_is_kept_for_keep_seconds_only(store, inspector, clock, r):
    store.write_server(SERVER, {}, ttl=3, keep=10)
    clock.advance(4)
    store.record_lost_servers(10)
    assert 0 < r.pttl(Keys().ended_server(SERVER["id"])) <= 10_000
    clock.advance(20)  # the next record written trims the list of those older than keep
    store.write_server({**SERVER, "id": "host-2:1:ef"}, {}, ttl=3, keep=10)
    clock.advance(4)
    store.record_lost_servers(10)
    assert r.zrange(Keys().ended_servers, 0, -1) == [b"host-2:1:ef"]
