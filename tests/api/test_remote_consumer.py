"""The engine's RemoteConsumer (Django-free) with an injected clock: upkeep, recovery, TTL expiry, next due time, and
the expire script's fence."""

from __future__ import annotations

import pytest

from taskq.queues.engine import Client, LeaseLostError, TaskNotFoundError, ValidationError
from taskq.queues.engine.remote_consumer import RemoteConsumer


@pytest.fixture
def parts(redis_url, redis_client, clock):
    client = Client(redis_url, clock=clock, policies=False)
    consumer = RemoteConsumer(redis_url, clock=clock, skew=1.0)
    yield client, consumer
    client.close()
    consumer.close()


def snapshot(conn):
    return {key: conn.dump(key) for key in sorted(conn.keys("*")) if not key.endswith(b"events")}


def test_lease_expiry_is_recovered_after_the_skew_and_redelivered(parts, clock):
    client, consumer = parts
    task_id = client.enqueue("t", queue="q", max_retry=1).id
    [first] = consumer.consume(["q"], ttr=10)
    clock.advance(10.5)  # expired, but within the skew allowance
    assert consumer.fetch(["q"], 10, 1) == []
    assert consumer.next_due(["q"]) == pytest.approx(first.lease_expires_at + 1.0)
    clock.advance(1)
    [second] = consumer.fetch(["q"], 10, 1)
    assert second.id == task_id and second.retried == 1
    with pytest.raises(LeaseLostError):
        consumer.ack("q", task_id, first.lease)
    clock.advance(12)
    assert consumer.fetch(["q"], 10, 1) == []  # tries spent: archived
    assert consumer.respawn("q", 10) == 1
    assert consumer.fetch(["q"], 10, 1)[0].id == task_id


def test_ttl_expiry_drops_and_the_next_task_is_delivered(parts, clock, redis_client):
    client, consumer = parts
    expired = client.enqueue("t", queue="q", deadline=clock.now() + 5).id
    fresh = client.enqueue("t", queue="q").id
    clock.advance(6)
    [got] = consumer.consume(["q"], ttr=10)
    assert got.id == fresh
    assert not redis_client.exists(f"tq:{{q}}:t:{expired}")
    assert redis_client.hget("tq:{q}:types", "active:t") == b"1"


def test_expire_refuses_a_stale_token_and_changes_nothing(parts, redis_client):
    client, consumer = parts
    task_id = client.enqueue("t", queue="q").id
    consumer.consume(["q"], ttr=10)
    before = snapshot(redis_client)
    with pytest.raises(LeaseLostError):
        consumer.broker.run(consumer.ops.expire("q", task_id, "stale", "why", "test"))
    with pytest.raises(TaskNotFoundError):
        consumer.broker.run(consumer.ops.expire("q", "missing", "stale", "why", "test"))
    assert snapshot(redis_client) == before


def test_fail_follows_the_worker_state_machine(parts, clock):
    client, consumer = parts
    task_id = client.enqueue("t", queue="q", max_retry=1).id
    [d] = consumer.consume(["q"], ttr=10)
    outcome = consumer.fail("q", task_id, d.lease, "boom")  # default delay: the workers' backoff
    assert outcome.state == "retry" and outcome.retry_at >= clock.now() + 15
    assert consumer.next_due(["q"]) == pytest.approx(outcome.retry_at)
    clock.set(outcome.retry_at)
    [d] = consumer.consume(["q"], ttr=10)
    assert consumer.fail("q", task_id, d.lease, "boom").state == "archived"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"queues": []},
        {"queues": "q"},
        {"queues": ["q"], "ttr": 0},
        {"queues": ["q"], "count": 0},
        {"queues": ["q"], "timeout": 100},
    ],
)
def test_consume_validates(parts, kwargs):
    _, consumer = parts
    args = {"ttr": 10, **kwargs}
    with pytest.raises(ValidationError):
        consumer.consume(args.pop("queues"), **args)
