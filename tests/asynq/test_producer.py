"""``AsynqClient`` on its own: asynq's client rules (defaults, whole seconds, where a task goes, its unique lock),
the errors that write nothing, the asyncio face, and the TaskInfo it returns. What Go itself writes and reads is
compared in ``test_producer_go.py``."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from taskq.queues.engine import DuplicateTaskError, TaskIdConflictError, ValidationError
from taskq.queues.engine.asynq import AsyncAsynqClient, AsynqClient
from taskq.queues.engine.asynq.keys import ALL_QUEUES, AsynqQueueKeys
from taskq.queues.engine.asynq.task_info import task_info
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.broker import AsyncBroker, Broker
from taskq.queues.engine.clock import FakeClock
from tests.engine.dbstate import dump

NOW = 1_700_000_000.75  # a fraction of a second, to see what is floored and what is cut
Q = AsynqQueueKeys("default")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[AsynqClient]:
    with AsynqClient(broker=Broker(redis_url, clock=clock)) as c:
        yield c
        c.broker.close()


def stored(r: redis.Redis, task_id: str, queue: str = "default") -> tuple[dict[bytes, bytes], WireTask]:
    fields = r.hgetall(AsynqQueueKeys(queue).task(task_id))
    return fields, WireTask.decode(fields[b"msg"])


def test_defaults_are_asynqs(client: AsynqClient, r: redis.Redis) -> None:
    info = client.enqueue("email:send", b"hello")
    assert uuid.UUID(info.id).version == 4 and str(uuid.UUID(info.id)) == info.id
    fields, message = stored(r, info.id)
    assert message == WireTask(
        type="email:send", payload=b"hello", id=info.id, queue="default", retry=25, timeout=1800
    )  # no deadline, no retention, no unique key, no group
    assert fields == {b"msg": fields[b"msg"], b"state": b"pending", b"pending_since": str(int(NOW * 1e9)).encode()}
    assert r.lrange(Q.pending, 0, -1) == [info.id.encode()]
    assert r.smembers(ALL_QUEUES) == {b"default"}
    assert info.state == "pending" and info.next_process_at == datetime.fromtimestamp(NOW, UTC)


@pytest.mark.parametrize(
    ("options", "timeout", "deadline"),
    [
        ({}, 1800, 0),
        ({"timeout": 90.9}, 90, 0),  # whole seconds, the rest cut off, as Go's int64(d.Seconds())
        ({"timeout": timedelta(minutes=2)}, 120, 0),
        ({"deadline": 1_800_000_000.9}, 0, 1_800_000_000),  # a deadline alone: no default timeout
        ({"deadline": datetime(2027, 1, 2, 3, 4, 5, 600_000, tzinfo=UTC)}, 0, 1798859045),
        ({"deadline": datetime(2027, 1, 2, 3, 4, 5)}, 0, 1798859045),  # naive means UTC
        ({"timeout": 60, "deadline": 1_800_000_000}, 60, 1_800_000_000),
    ],
)
def test_timeout_and_deadline(client: AsynqClient, r: redis.Redis, options: Any, timeout: int, deadline: int) -> None:
    info = client.enqueue("t", b"", task_id="t1", **options)
    _, message = stored(r, "t1")
    assert (message.timeout, message.deadline) == (timeout, deadline)
    assert info.timeout == (float(timeout) if timeout else None)


def test_every_option_lands_in_the_message(client: AsynqClient, r: redis.Redis) -> None:
    client.enqueue(
        "report",
        {"day": "2026-11-29"},
        queue="reports",
        max_retry=3,
        retention=timedelta(hours=1, seconds=0.5),
        headers={"trace": "abc", "tenant": "7"},
        task_id="r1",
    )
    fields, message = stored(r, "r1", "reports")
    assert message.payload == b'{"day":"2026-11-29"}'  # JSON as taskq's Client writes it
    assert (message.queue, message.retry, message.retention) == ("reports", 3, 3600)
    assert message.headers == {"trace": "abc", "tenant": "7"}
    assert r.smembers(ALL_QUEUES) == {b"reports"}


@pytest.mark.parametrize(
    ("options", "state"),
    [
        ({"process_in": 0}, "pending"),
        ({"process_at": NOW}, "pending"),  # now is not after now
        ({"process_at": NOW - 60}, "pending"),
        ({"process_at": datetime.fromtimestamp(NOW - 1, UTC)}, "pending"),
        ({"process_in": 0.5}, "scheduled"),
        ({"process_in": timedelta(minutes=1)}, "scheduled"),
        ({"group": "daily"}, "aggregating"),
        ({"group": "daily", "process_in": 30}, "scheduled"),  # the forwarder will put it in its group later
        ({"group": "daily", "process_at": NOW - 5}, "aggregating"),
    ],
)
def test_where_a_task_goes(client: AsynqClient, r: redis.Redis, options: Any, state: str) -> None:
    info = client.enqueue("t", b"p", task_id="t1", **options)
    fields, message = stored(r, "t1")
    assert info.state == fields[b"state"].decode() == state
    assert message.group_key == options.get("group", "")
    in_pending = r.lrange(Q.pending, 0, -1) == [b"t1"]
    scheduled = r.zscore(Q.scheduled, "t1")
    grouped = r.zscore(Q.group("daily"), "t1")
    assert (in_pending, scheduled is not None, grouped is not None) == (
        state == "pending",
        state == "scheduled",
        state == "aggregating",
    )
    if state == "scheduled":
        delay = options["process_in"]
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        assert scheduled == int(NOW + seconds)  # Unix seconds, floored
        assert info.next_process_at == datetime.fromtimestamp(scheduled, UTC)
        assert b"pending_since" not in fields and b"group" not in fields
    if state == "aggregating":
        assert grouped == int(NOW)
        assert fields[b"group"] == b"daily" and r.smembers(Q.groups) == {b"daily"}
        assert info.group == "daily" and info.next_process_at is None


@pytest.mark.parametrize(
    ("options", "ttl", "hash_names_lock"),
    [
        ({}, 90, True),
        ({"process_in": 600}, 690, True),  # the lock outlives the wait: TTL counted from the process time
        ({"process_at": NOW + 600.5}, 691, True),  # int(600.5 + 90.5), as Go's int(time.Until(...).Seconds())
        ({"group": "daily"}, 90, False),  # asynq's group scripts name the lock in the message only
    ],
)
def test_unique_lock(client: AsynqClient, r: redis.Redis, options: Any, ttl: int, hash_names_lock: bool) -> None:
    unique_ttl = 90.5 if "process_at" in options else 90
    info = client.enqueue("email", b"payload", unique_ttl=unique_ttl, task_id="t1", **options)
    lock = Q.unique("email", b"payload")
    assert lock == "asynq:{default}:unique:email:321c3cf486ed509164edec1e1981fec8"
    assert r.get(lock) == b"t1" and r.ttl(lock) == ttl
    fields, message = stored(r, "t1")
    assert message.unique_key == lock == info.unique_key
    assert fields.get(b"unique_key") == (lock.encode() if hash_names_lock else None)


def test_a_nil_payload_locks_without_a_digest(client: AsynqClient, r: redis.Redis) -> None:
    client.enqueue("ping", None, unique_ttl=60, task_id="n1")
    assert r.get("asynq:{default}:unique:ping:") == b"n1"
    client.enqueue("ping", b"", unique_ttl=60, task_id="n2")  # Go's empty slice: the digest of nothing
    assert r.get(Q.unique("ping", b"")) == b"n2"


def test_the_returned_info_is_what_a_reader_reads_back(client: AsynqClient, r: redis.Redis) -> None:
    for n, options in enumerate(({}, {"process_in": 60, "unique_ttl": 5}, {"group": "g", "unique_ttl": 5})):
        info = client.enqueue("t", b"x%d" % n, headers={"a": "b"}, **options)
        fields = r.hgetall(Q.task(info.id))
        score = r.zscore(Q.scheduled, info.id)
        assert info == task_info("default", info.id, fields, score)


def test_a_duplicate_is_refused_and_changes_nothing(client: AsynqClient, r: redis.Redis) -> None:
    first = client.enqueue("email", b"payload", unique_ttl=60)
    before = dump(r)
    for options in ({}, {"process_in": 60}, {"group": "g"}, {"task_id": first.id}):
        with pytest.raises(DuplicateTaskError, match="unique lock"):
            client.enqueue("email", b"payload", unique_ttl=60, **options)
    assert dump(r) == before
    client.enqueue("email", b"another payload", unique_ttl=60)  # another payload is another task


def test_a_taken_id_is_refused_and_changes_nothing(client: AsynqClient, r: redis.Redis) -> None:
    client.enqueue("email", b"payload", task_id="same", process_in=60)
    before = dump(r)
    for options in ({}, {"process_in": 60}, {"group": "g"}, {"unique_ttl": 60}, {"unique_ttl": 60, "group": "g"}):
        with pytest.raises(TaskIdConflictError, match="same"):
            client.enqueue("other", b"other", task_id="same", **options)
    assert dump(r) == before
    client.enqueue("email", b"payload", task_id="same", queue="elsewhere")  # an id is unique within its queue


@pytest.mark.parametrize(
    ("task_type", "payload", "options", "named"),
    [
        ("", b"", {}, "task type"),
        ("t", object(), {}, "payload"),
        ("t", b"", {"queue": ""}, "queue name"),
        ("t", b"", {"queue": "a{b}"}, "queue name"),
        ("t", b"", {"queue": None}, "queue name"),
        ("t", b"", {"max_retry": -1}, "max_retry"),
        ("t", b"", {"max_retry": "3"}, "max_retry"),
        ("t", b"", {"timeout": 0.5}, "timeout"),
        ("t", b"", {"timeout": -1}, "timeout"),
        ("t", b"", {"timeout": "1m"}, "timeout"),
        ("t", b"", {"deadline": "tomorrow"}, "deadline"),
        ("t", b"", {"unique_ttl": 0.9}, "unique_ttl"),
        ("t", b"", {"unique_ttl": timedelta(0)}, "unique_ttl"),
        ("t", b"", {"process_in": -5}, "process_in"),
        ("t", b"", {"process_at": "soon"}, "process_at"),
        ("t", b"", {"process_at": NOW, "process_in": 5}, "process_at or process_in"),
        ("t", b"", {"task_id": ""}, "task id"),
        ("t", b"", {"task_id": " x"}, "task id"),
        ("t", b"", {"retention": -1}, "retention"),
        ("t", b"", {"group": "  "}, "group"),
        ("t", b"", {"headers": {"a": 1}}, "header"),
        ("t", b"", {"unique": 60}, "unknown option(s): unique"),
    ],
)
def test_bad_input_is_named_and_writes_nothing(
    client: AsynqClient, r: redis.Redis, task_type: str, payload: Any, options: Any, named: str
) -> None:
    with pytest.raises(ValidationError, match=named.replace("(", r"\(").replace(")", r"\)")):
        client.enqueue(task_type, payload, **options)
    assert dump(r) == {}


def test_close_closes_only_what_the_client_opened(redis_url: str, r: redis.Redis) -> None:
    broker = Broker(redis_url)
    with AsynqClient(broker=broker) as borrowing:
        borrowing.enqueue("t", b"")
    assert broker.send("test", "ping")  # still open
    broker.close()
    with pytest.raises(ValidationError, match="not both"):
        AsynqClient(redis_url, broker=broker)
    with AsynqClient(redis_url) as owning:
        owning.enqueue("t", b"", queue="own")
    assert r.smembers(ALL_QUEUES) == {b"default", b"own"}


def test_the_asyncio_client_writes_what_the_blocking_one_does(redis_url: str, r: redis.Redis, clock: FakeClock) -> None:
    options: Any = {"task_id": "a1", "unique_ttl": 30, "process_in": 10, "max_retry": 2, "headers": {"k": "v"}}
    with AsynqClient(broker=Broker(redis_url, clock=clock)) as blocking:
        blocking_info = blocking.enqueue("t", b"x", **options)
        blocking.broker.close()
    blocking_keys = dump(r)
    r.flushdb()

    async def enqueue() -> Any:
        async with AsyncAsynqClient(broker=AsyncBroker(redis_url, clock=clock)) as client:
            info = await client.enqueue("t", b"x", **options)
            with pytest.raises(DuplicateTaskError):
                await client.enqueue("t", b"x", unique_ttl=30)
            await client.broker.close()
            return info

    assert asyncio.run(enqueue()) == blocking_info
    assert dump(r) == blocking_keys
