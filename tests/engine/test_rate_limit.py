"""Rate limits through the engine with a FakeClock: the window slides with the injected clock, several brokers (as
several workers) share one limit, the remote consumer obeys it, and a definition carries it to Redis and back."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine import Client, FakeClock, Keys, ValidationError
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec
from taskq.queues.engine.remote_consumer import CAPPED_RECHECK, RemoteConsumer
from taskq.queues.engine.transitions import RateLimit

from .task_state import NOW

Q = "emails"


def take(broker: Broker, k: int, rate: RateLimit, cap: int = 0):
    token_prefix = f"w{id(broker)}:{broker.clock.now()}:"  # unique to the call, as the header asks
    return broker.run(broker.transitions.dequeue(Q, k, 30, "w", token_prefix, cap, rate))


def started_at(r) -> list[int]:
    """The start times (ms) of every task, from the queue's events."""
    return sorted(int(f[b"at"]) for _, f in r.xrange(Keys().queue(Q).events) if f[b"to"] == b"active")


def most_in_any_window(times_ms: list[int], period_ms: int) -> int:
    return max((sum(1 for t in times_ms if start - period_ms < t <= start) for start in times_ms), default=0)


@pytest.fixture
def client(r, redis_url, clock):
    c = Client(redis_url, clock=clock, policies=False)
    yield c
    c.close()


def test_the_window_slides_with_the_clock(r, broker: Broker, client: Client, clock: FakeClock):
    client.enqueue_many([("send", {"n": n}) for n in range(10)], queue=Q)
    rate = RateLimit(3, 1.0)
    first = take(broker, 10, rate)
    assert len(first) == 3 and first.limited_until == NOW + 1.0
    clock.advance(0.999)
    refused = take(broker, 10, rate)
    assert refused == [] and refused.limited_until == NOW + 1.0
    clock.set(first.limited_until)
    second = take(broker, 2, rate)
    assert len(second) == 2 and second.limited_until is None  # one start of the window left
    clock.advance(0.5)
    third = take(broker, 10, rate)
    assert len(third) == 1 and third.limited_until == NOW + 2.0
    assert r.llen(Keys().queue(Q).pending) == 4  # the rest wait in pending, not in retry
    assert most_in_any_window(started_at(r), 1000) == 3


def test_several_workers_share_one_limit(r, redis_url, client: Client, clock: FakeClock):
    client.enqueue_many([("send", {"n": n}) for n in range(40)], queue=Q)
    brokers = [Broker(redis_url, clock=clock) for _ in range(3)]
    try:
        rate = RateLimit(5, 2.0)
        for _ in range(32):  # 8 seconds in quarter-second steps, each broker asking for more than the limit
            for broker in brokers:
                take(broker, 4, rate)
            clock.advance(0.25)
    finally:
        for broker in brokers:
            broker.close()
    times = started_at(r)
    assert len(times) == 20  # 5 per 2 s for 8 s: the limit, fully used
    assert most_in_any_window(times, 2000) == 5


def test_the_cap_and_the_rate_limit_both_hold(r, broker: Broker, client: Client, clock: FakeClock):
    client.enqueue_many([("send", {"n": n}) for n in range(10)], queue=Q)
    rate = RateLimit(5, 1.0)
    assert len(take(broker, 10, rate, cap=2)) == 2  # the cap is tighter
    refused = take(broker, 10, rate, cap=2)
    assert refused == [] and refused.limited_until is None  # at the cap: only a finished task frees a slot


def test_the_consumer_obeys_the_rate_limit_and_waits_for_the_window(r, redis_url, client: Client, clock: FakeClock):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, rate_limit=2, rate_period=10.0)}))
    client.enqueue_many([("send", {"n": n}) for n in range(5)], queue=Q)
    consumer = RemoteConsumer(redis_url, clock=clock)
    try:
        assert len(consumer.fetch([Q], 30, 5)) == 2
        assert consumer.fetch([Q], 30, 5) == []
        _, limited_until = consumer._fetch([Q], 30, 5, None)
        assert limited_until == NOW + 10.0
        clock.advance(10)
        assert len(consumer.fetch([Q], 30, 5)) == 2
    finally:
        consumer.close()


def test_a_definition_carries_its_rate_limit_through_redis(r):
    store = PolicyStore(Broker(conn=r))
    store.write(
        PolicySet(
            queues={Q: QueueSpec(Q, concurrency_cap=5, rate_limit=100, rate_period=2.0), "free": QueueSpec("free")}
        )
    )
    read = store.read().queues
    assert read[Q].rate == RateLimit(100, 2.0) and read[Q].concurrency_cap == 5
    assert read["free"].rate_limit == 0
    assert json.loads(r.hget(Keys().config_queues, "free")) == {"weight": 1, "rank": 0, "cap": 0}


@pytest.mark.parametrize(
    "limit, period, message",
    [
        (-1, 1.0, "rate limit must be between 0 and 1000000"),
        (1_000_001, 1.0, "rate limit must be between 0 and 1000000"),
        (10, 0, "rate period must be more than 0"),
        (10, "1", "rate period must be a number of seconds"),
    ],
)
def test_a_bad_rate_limit_is_refused_by_name(limit, period, message):
    with pytest.raises(ValidationError, match=message):
        QueueSpec(Q, rate_limit=limit, rate_period=period)


def test_a_bad_rate_limit_in_redis_skips_that_definition_only(r):
    keys = Keys()
    r.hset(
        keys.config_queues,
        mapping={
            Q: json.dumps({"weight": 1, "rate_limit": 5, "rate_period": 0}),
            "fine": json.dumps({"weight": 2, "rate_limit": 5, "rate_period": 2}),
        },
    )
    assert list(PolicyStore(Broker(conn=r)).read().queues) == ["fine"]


def test_a_consumer_held_at_the_cap_with_tasks_pending_rechecks_soon(r, redis_url, client: Client, clock: FakeClock):
    # A freed slot publishes nothing, so the long poll must not sleep until the holder's lease (30 s) runs out.
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, concurrency_cap=1)}))
    client.enqueue("first", queue=Q)
    consumer = RemoteConsumer(redis_url, clock=clock)
    try:
        [first] = consumer.fetch([Q], 30, 5)
        assert consumer._fetch([Q], 30, 5, None) == ([], None)  # at the cap, but nothing waits for the slot
        client.enqueue("second", queue=Q)
        assert consumer._fetch([Q], 30, 5, None) == ([], NOW + CAPPED_RECHECK)
        consumer.ack(Q, first.id, first.lease)
        assert [d.type for d in consumer.fetch([Q], 30, 5)] == ["second"]
    finally:
        consumer.close()
