"""The blocking producer API: validation, placement, enqueue_many, wait, errors, script cache recovery."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
import redis

from taskq.queues.engine import BulkEnqueueError, Client, FakeClock
from taskq.queues.engine.broker import Broker, functions
from taskq.queues.engine.errors import (
    DuplicateTaskError,
    RedisUnavailableError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.policies import PolicySet, PolicyStore
from taskq.queues.engine.sans_io import Pipeline
from taskq.queues.engine.scripts import script
from taskq.queues.engine.transitions import BULK_CHUNK

from .dbstate import ZSet, dump
from .script_runs import finishing_worker
from .task_state import KEYS, NOW, NOW_MS, Q

# (type, payload, options) that must be refused before anything is written.
INVALID = [
    pytest.param("email", {}, {"queue": ""}, id="empty queue"),
    pytest.param("email", {}, {"queue": "q" * 129}, id="queue too long"),
    pytest.param("email", {}, {"queue": "a\nb"}, id="control char in queue"),
    pytest.param("email", {}, {"queue": "a\x85b"}, id="C1 control char in queue"),
    pytest.param("email", {}, {"queue": "a{b"}, id="brace in queue"),
    pytest.param("email", {}, {"queue": "a}b"}, id="closing brace in queue"),
    pytest.param("email", {}, {"queue": 7}, id="queue not a string"),
    pytest.param("email", {}, {"queue": ".."}, id="queue named dot dot"),
    pytest.param("email", {}, {"queue": "."}, id="queue named dot"),
    pytest.param("email", {}, {"queue": "*"}, id="queue named star"),
    pytest.param("email", {}, {"queue": "tenant-?"}, id="question mark in queue"),
    pytest.param("email", {}, {"queue": "a[b]"}, id="bracket in queue"),
    pytest.param("", {}, {}, id="empty type"),
    pytest.param("t" * 257, {}, {}, id="type too long"),
    pytest.param("a\x00b", {}, {}, id="control char in type"),
    pytest.param(None, {}, {}, id="type not a string"),
    pytest.param("email", b"x" * (1024 * 1024 + 1), {}, id="payload too big"),
    pytest.param("email", {"big": "x" * (1024 * 1024)}, {}, id="JSON payload too big"),
    pytest.param("email", object(), {}, id="payload not JSON-serializable"),
    pytest.param("email", {"n": float("nan")}, {}, id="payload with NaN"),
    pytest.param("email", {}, {"max_retry": -1}, id="negative max_retry"),
    pytest.param("email", {}, {"max_retry": 1001}, id="max_retry too big"),
    pytest.param("email", {}, {"max_retry": "3"}, id="max_retry a string"),
    pytest.param("email", {}, {"max_retry": True}, id="max_retry a bool"),
    pytest.param("email", {}, {"timeout": 0}, id="zero timeout"),
    pytest.param("email", {}, {"timeout": -5}, id="negative timeout"),
    pytest.param("email", {}, {"timeout": float("nan")}, id="NaN timeout"),
    pytest.param("email", {}, {"timeout": 400 * 24 * 3600}, id="timeout over a year"),
    pytest.param("email", {}, {"timeout": "10"}, id="timeout a string"),
    pytest.param("email", {}, {"retention": -1}, id="negative retention"),
    pytest.param("email", {}, {"retention": "1h"}, id="retention a string"),
    pytest.param("email", {}, {"unique": 0}, id="zero unique ttl"),
    pytest.param("email", {}, {"unique": True}, id="unique a bool"),
    pytest.param("email", {}, {"process_in": -1}, id="negative process_in"),
    pytest.param("email", {}, {"process_in": "soon"}, id="process_in a string"),
    pytest.param("email", {}, {"process_at": "tomorrow"}, id="process_at a string"),
    pytest.param("email", {}, {"process_at": -1}, id="negative process_at"),
    pytest.param("email", {}, {"process_at": float("inf")}, id="infinite process_at"),
    pytest.param("email", {}, {"process_at": NOW * 1000}, id="process_at in epoch ms"),
    pytest.param("email", {}, {"process_at": NOW + 60, "process_in": 60}, id="process_at and process_in"),
    pytest.param("email", {}, {"deadline": NOW * 1000}, id="deadline in epoch ms"),
    pytest.param("email", {}, {"deadline": float("nan")}, id="NaN deadline"),
    pytest.param("email", {}, {"deadline": "noon"}, id="deadline a string"),
    pytest.param("email", {}, {"priority": 1}, id="unknown option"),
    pytest.param("email", {}, {"headers": "x=1"}, id="headers not a dict"),
    pytest.param("email", {}, {"headers": {"a": 1}}, id="header value not a string"),
    pytest.param("email", {}, {"headers": {1: "a"}}, id="header name not a string"),
    pytest.param("email", {}, {"headers": {"": "a"}}, id="empty header name"),
    pytest.param("email", {}, {"headers": {f"h{i}": "v" for i in range(65)}}, id="too many headers"),
    pytest.param("email", {}, {"task_id": "i" * 10 * 1024}, id="10 KB task id"),
    pytest.param("email", {}, {"task_id": ""}, id="empty task id"),
    pytest.param("email", {}, {"task_id": "a\tb"}, id="control char in task id"),
]


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Client]:
    with Client(redis_url, clock=clock) as c:
        yield c


@pytest.mark.parametrize(("task_type", "payload", "options"), INVALID)
def test_invalid_enqueue_writes_nothing(r, client, task_type, payload, options):
    with pytest.raises(ValidationError) as refused:
        client.enqueue(task_type, payload, **options)
    assert refused.value.op == "client.enqueue"
    assert dump(r) == {}


@pytest.mark.parametrize(("task_type", "payload", "options"), INVALID)
def test_invalid_item_refuses_the_whole_batch(r, client, task_type, payload, options):
    items = [("email", {"n": 1}), {"type": task_type, "payload": payload, **options}, ("email", {"n": 2})]
    with pytest.raises(ValidationError, match="^client.enqueue_many: item 1: "):
        client.enqueue_many(items)
    assert dump(r) == {}


@pytest.mark.parametrize("item", [("email",), "email", ("email", {}, {}), 42])
def test_enqueue_many_rejects_what_is_not_an_item(r, client, item):
    with pytest.raises(ValidationError, match="item 0 is neither"):
        client.enqueue_many([item])
    assert dump(r) == {}


def test_enqueue_pending(r, client):
    info = client.enqueue("email", {"to": "adà"}, max_retry=3, timeout=10, retention=60, headers={"k": "v"})
    assert (info.state, info.queue, info.type, info.max_retry, info.timeout, info.retention, info.headers) == (
        "pending",
        "default",
        "email",
        3,
        10.0,
        60.0,
        {"k": "v"},
    )
    assert len(info.id) == 32
    assert r.lrange(Q.pending, 0, -1) == [info.id.encode()]
    stored = r.hgetall(Q.task(info.id))
    assert stored[b"payload"] == '{"to":"adà"}'.encode()  # compact JSON, UTF-8 kept
    assert r.smembers("tq:queues") == {b"default"}


def test_payload_bytes_are_stored_as_given(r, client):
    info = client.enqueue("blob", b"\x00\xff{not json")
    assert info.payload == b"\x00\xff{not json"
    assert r.hget(Q.task(info.id), "payload") == b"\x00\xff{not json"


@pytest.mark.parametrize(
    ("payload", "stored"),
    [
        ({"a": [1, 2.5, None, True]}, b'{"a":[1,2.5,null,true]}'),
        ("text", b'"text"'),
        (7, b"7"),
        (None, b"null"),
        (bytearray(b"ba"), b"ba"),
        (memoryview(b"mv"), b"mv"),
    ],
)
def test_payload_json_or_bytes(r, client, payload, stored):
    info = client.enqueue("t", payload)
    assert r.hget(Q.task(info.id), "payload") == stored == info.payload


@pytest.mark.parametrize(
    "process_at",
    [
        datetime.fromtimestamp(NOW + 90, tz=UTC),
        datetime.fromtimestamp(NOW + 90, tz=timezone(timedelta(hours=5))),  # the same instant elsewhere
        datetime.fromtimestamp(NOW + 90, tz=UTC).replace(tzinfo=None),  # naive means UTC
        NOW + 90,
        int(NOW + 90),
    ],
)
def test_process_at_schedules(r, client, process_at):
    info = client.enqueue("email", {}, process_at=process_at)
    assert info.state == "scheduled"
    assert info.next_process_at == datetime.fromtimestamp(NOW + 90, tz=UTC)
    assert dump(r)[Q.scheduled] == ZSet({info.id: NOW_MS + 90_000})
    assert Q.pending not in dump(r)


@pytest.mark.parametrize("options", [{"process_at": NOW - 5}, {"process_at": NOW}, {"process_in": 0}])
def test_process_time_not_in_the_future_is_pending(r, client, options):
    info = client.enqueue("email", {}, **options)
    assert info.state == "pending"
    assert r.lrange(Q.pending, 0, -1) == [info.id.encode()]


def test_process_in(r, client):
    info = client.enqueue("email", {}, process_in=2.5)
    assert dump(r)[Q.scheduled] == ZSet({info.id: NOW_MS + 2500})


def test_unique_duplicate_is_refused_and_named(r, client):
    first = client.enqueue("email", {"to": "ada"}, unique=60)
    before = dump(r)
    with pytest.raises(DuplicateTaskError) as refused:
        client.enqueue("email", {"to": "ada"}, unique=60)
    assert '"email"' in str(refused.value) and '"default"' in str(refused.value)
    assert refused.value.op == "client.enqueue"
    assert type(refused.value) is DuplicateTaskError  # one enqueue: the plain error, not a bulk one
    assert dump(r) == before
    assert r.get(first.unique_key) == first.id.encode()
    assert 0 < r.pttl(first.unique_key) <= 60_000
    # Another payload, type or queue is other work.
    client.enqueue("email", {"to": "bob"}, unique=60)
    client.enqueue("sms", {"to": "ada"}, unique=60)
    client.enqueue("email", {"to": "ada"}, unique=60, queue="other")


def test_task_id_conflict_is_refused_and_named(r, client):
    client.enqueue("email", {}, task_id="order-42")
    before = dump(r)
    with pytest.raises(TaskIdConflictError, match="order-42") as refused:
        client.enqueue("email", {"other": 1}, task_id="order-42")
    assert type(refused.value) is TaskIdConflictError
    assert dump(r) == before
    client.enqueue("email", {}, task_id="order-42", queue="other")  # ids are per queue


def test_enqueue_many_chunks_and_keeps_order(r, client, monkeypatch):
    calls: list[int] = []
    run_pipeline = client.broker.run_pipeline

    def counting(pipeline: Pipeline, **options):
        calls.extend(len(call.args) for call in pipeline.calls)
        return run_pipeline(pipeline, **options)

    monkeypatch.setattr(client.broker, "run_pipeline", counting)
    infos = client.enqueue_many([("n", {"i": i}) for i in range(2 * BULK_CHUNK + 500)])
    assert len(calls) == 3  # one script call per chunk of 1000, the three sent without waiting for each other
    assert [i.json()["i"] for i in infos] == list(range(2500))
    next_up = [r.hget(Q.task(i.decode()), "payload") for i in r.lrange(Q.pending, -3, -1)][::-1]
    assert next_up == [b'{"i":0}', b'{"i":1}', b'{"i":2}']  # the first item runs first
    assert r.llen(Q.pending) == 2500


def test_enqueue_many_mixed_queues_and_per_item_options(r, client):
    infos = client.enqueue_many(
        [
            ("email", {"n": 0}),
            {"type": "sms", "payload": {"n": 1}, "queue": "critical", "max_retry": 1},
            {"type": "email", "payload": {"n": 2}, "process_in": 60, "unique": None},
            {"type": "email", "payload": {"n": 3}, "queue": "critical"},
        ],
        max_retry=7,
        unique=30,
    )
    # Results come back in the order of the items, whatever the queues.
    assert [(i.json()["n"], i.queue, i.state, i.max_retry) for i in infos] == [
        (0, "default", "pending", 7),
        (1, "critical", "pending", 1),
        (2, "default", "scheduled", 7),
        (3, "critical", "pending", 7),
    ]
    assert [i.unique_key is not None for i in infos] == [True, True, False, True]
    assert r.llen(Q.pending) == 1 and r.llen("tq:{critical}:pending") == 2
    assert r.smembers("tq:queues") == {b"default", b"critical"}


def test_enqueue_many_duplicate_in_a_later_chunk(r, client):
    items = [("n", {"i": i}) for i in range(BULK_CHUNK + 10)]
    items[5] = {"type": "u", "payload": {"same": 1}, "unique": 60}
    items[BULK_CHUNK + 3] = {"type": "u", "payload": {"same": 1}, "unique": 60}
    with pytest.raises(DuplicateTaskError) as refused:
        client.enqueue_many(items)
    enqueued = refused.value.enqueued
    assert len(enqueued) == BULK_CHUNK  # the first chunk went in; the second, with the duplicate, did not
    assert [i.json() for i in enqueued[:7]] == [{"i": 0}, {"i": 1}, {"i": 2}, {"i": 3}, {"i": 4}, {"same": 1}, {"i": 6}]
    assert {i.id.encode() for i in enqueued} == set(r.lrange(Q.pending, 0, -1))  # the second chunk wrote nothing
    assert '"u"' in str(refused.value)


@pytest.mark.parametrize("one_by_one", [False, True], ids=["pipelined", "one after another"])
def test_enqueue_many_writes_nothing_behind_a_refused_chunk(r, client, monkeypatch, one_by_one):
    """The chunks are sent without waiting for each other; a refused chunk's barrier keeps the chunks sent behind it
    from writing, as when they ran one after another (Cluster clients, wait_replicas)."""
    if one_by_one:  # as a Cluster client runs them
        monkeypatch.setattr(client.broker, "cluster", True)
    items: list = [("n", {"i": i}) for i in range(2 * BULK_CHUNK + 10)]
    items[BULK_CHUNK + 3] = {"type": "n", "payload": {}, "task_id": "taken"}
    client.enqueue("n", {}, task_id="taken")
    with pytest.raises(TaskIdConflictError) as refused:
        client.enqueue_many(items)
    assert isinstance(refused.value, BulkEnqueueError)  # the declared type, with what it stopped at and before
    assert refused.value.position == 3
    enqueued = refused.value.enqueued
    assert [i.json()["i"] for i in enqueued] == list(range(BULK_CHUNK))  # the first chunk, in order
    pending = set(r.lrange(Q.pending, 0, -1))
    assert pending == {i.id.encode() for i in enqueued} | {b"taken"}  # neither the second chunk nor the third
    assert r.hlen(Q.type_counts) == 1 and r.hget(Q.type_counts, "pending:n") == str(BULK_CHUNK + 1).encode()
    assert r.xlen(Q.events) == BULK_CHUNK + 1
    assert len(r.keys(Q.barrier("*"))) == 1  # the refused call's barrier, for a minute


def test_enqueue_many_after_the_script_cache_was_flushed(r, client):
    """Every pipelined call answers NOSCRIPT (none ran): each is sent again in full, in order."""
    client.enqueue("n", {})
    r.script_flush()
    infos = client.enqueue_many([("n", {"i": i}) for i in range(2 * BULK_CHUNK + 5)])
    assert [i.json()["i"] for i in infos] == list(range(2 * BULK_CHUNK + 5))
    oldest_first = [r.hget(Q.task(i.decode()), "payload") for i in r.lrange(Q.pending, 0, -1)[::-1]]
    assert oldest_first[1:] == [f'{{"i":{i}}}'.encode() for i in range(2 * BULK_CHUNK + 5)]


def test_enqueue_many_duplicate_inside_a_chunk_writes_nothing(r, client):
    with pytest.raises(DuplicateTaskError) as refused:
        client.enqueue_many([("u", {"same": 1}), ("u", {"same": 1})], unique=60)
    assert refused.value.enqueued == []
    assert dump(r) == {KEYS.layout: "1"}  # only the layout stamp of the client's first write (see test_layout)


def test_enqueue_many_empty(r, client):
    assert client.enqueue_many([]) == []
    assert dump(r) == {}


def test_enqueue_many_checks_each_type_once_yet_gives_every_task_its_own_policy_and_lock(r, client):
    # Types repeat and interleave, as in a real batch: the per-call memo of validated types and policies must
    # neither mix types up nor share a unique lock between payloads.
    PolicyStore(Broker(conn=r)).write(PolicySet(unique={"a:": 60.0}))
    many = client.enqueue_many([("a:x", 1), ("b", 1), ("a:x", 2), ("b", 1), ("a:x", 3)])
    assert [m.unique_key is not None for m in many] == [True, False, True, False, True]
    assert len({m.unique_key for m in many if m.unique_key}) == 3
    assert [m.type for m in many] == ["a:x", "b", "a:x", "b", "a:x"]
    assert many[0].created_at is many[1].created_at  # one datetime per instant of the call, shared
    with pytest.raises(ValidationError, match="item 2: task type must be a non-empty string"):
        client.enqueue_many([("b", 1), ("b", 2), ("", 3)])
    with pytest.raises(DuplicateTaskError):
        client.enqueue_many([("a:x", 9), ("b", 9), ("a:x", 9)])


# -- wait ---------------------------------------------------------------------------------------------------------


def _signal_on(client: Client, command: str, monkeypatch) -> threading.Event:
    """An event set when the client is about to send ``command``: the waiter has read the task by then."""
    reached = threading.Event()
    execute = client.broker.execute

    def spying(op, request, replicated=False):
        if getattr(request, "name", None) == command:
            reached.set()
        return execute(op, request, replicated)

    monkeypatch.setattr(client.broker, "execute", spying)
    return reached


def test_wait_returns_the_result_with_retention(r, redis_url, client, monkeypatch):
    info = client.enqueue("email", {}, retention=3600)

    def finish(broker, leased):
        broker.run(broker.transitions.write_result("default", leased.id, leased.token, "result", b'{"ok":true}'))
        broker.run(broker.transitions.complete("default", [(leased.id, leased.token, 3600)], "w1"))

    thread = finishing_worker(redis_url, "default", finish, _signal_on(client, "xread", monkeypatch))
    done = client.wait(info.id, timeout=30)
    thread.join(30)
    assert (done.id, done.state, done.result_json()) == (info.id, "completed", {"ok": True})
    assert done.completed_at == datetime.fromtimestamp(NOW, tz=UTC)


def test_wait_without_retention_says_completed(r, redis_url, client, monkeypatch):
    info = client.enqueue("email", {"to": "ada"})

    def finish(broker, leased):
        assert broker.run(broker.transitions.done("default", [(leased.id, leased.token)], "w1")) == ["OK"]

    thread = finishing_worker(redis_url, "default", finish, _signal_on(client, "xread", monkeypatch))
    done = client.wait(info.id, timeout=30)
    thread.join(30)
    assert (done.id, done.state, done.json()) == (info.id, "completed", {"to": "ada"})
    assert not r.exists(Q.task(info.id))


def test_wait_returns_archived(r, redis_url, client, monkeypatch):
    info = client.enqueue("email", {})

    def fail(broker, leased):
        broker.run(broker.transitions.archive("default", leased.id, leased.token, "boom", worker="w1"))

    thread = finishing_worker(redis_url, "default", fail, _signal_on(client, "xread", monkeypatch))
    dead = client.wait(info.id, timeout=30)
    thread.join(30)
    assert (dead.state, dead.last_error) == ("archived", "boom")


def test_wait_times_out(client):
    info = client.enqueue("email", {})
    with pytest.raises(TimeoutError, match=info.id):
        client.wait(info.id, timeout=0.05)


def test_wait_unknown_task(client):
    with pytest.raises(TaskNotFoundError, match="nope"):
        client.wait("nope", timeout=5)


def test_wait_deleted_task(r, redis_url, client, monkeypatch):
    from taskq.queues.engine import Inspector

    info = client.enqueue("email", {})
    reached = _signal_on(client, "xread", monkeypatch)

    def delete() -> None:
        assert reached.wait(30)
        inspector = Inspector(redis_url, clock=FakeClock(NOW))
        try:
            inspector.delete_task("default", info.id)
        finally:
            inspector.broker.close()

    thread = threading.Thread(target=delete, daemon=True)
    thread.start()
    with pytest.raises(TaskNotFoundError, match="deleted"):
        client.wait(info.id, timeout=30)
    thread.join(30)


# -- Redis down, script cache flushed -----------------------------------------------------------------------------


def test_unreachable_redis():
    with Client("redis://127.0.0.1:1/0") as down:
        with pytest.raises(RedisUnavailableError):
            down.enqueue("email", {})
        with pytest.raises(RedisUnavailableError):
            down.enqueue_many([("email", {})])
        with pytest.raises(RedisUnavailableError):
            down.wait("x", timeout=1)
        with pytest.raises(RedisUnavailableError) as refused:
            down.broker.run(down.broker.transitions.pause("default", "op"))
        assert refused.value.op == "pause"


def test_noscript_recovery(r, client, broker):
    """Where scripts run by EVALSHA (a server without functions, or a pool told to keep it; see functions.py)."""
    functions.use_evalsha(client.broker.conn)
    functions.use_evalsha(broker.conn)
    client.enqueue("email", {})
    r.script_flush()
    assert r.script_exists(script("enqueue").sha) == [False]
    client.enqueue("email", {})  # EVALSHA fails with NOSCRIPT, the full script is sent again
    assert r.script_exists(script("enqueue").sha) == [True]
    r.script_flush()
    leased = broker.run(broker.transitions.dequeue("default", 2, 30, "w1", "tok-"))
    assert len(leased) == 2
    assert r.llen(Q.pending) == 0


def test_scheduled_unique_task_holds_its_lock_past_its_process_time(r, client):
    """asynq's rule: the lock lasts ttl after the process time, so no duplicate slips in while the task waits."""
    info = client.enqueue("email", {}, unique=60, process_in=3600)
    assert 3_600_000 < r.pttl(info.unique_key) <= 3_660_000
    pending = client.enqueue("email", {"other": 1}, unique=60)
    assert 0 < r.pttl(pending.unique_key) <= 60_000
