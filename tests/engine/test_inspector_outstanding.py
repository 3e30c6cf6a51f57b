"""``Inspector.outstanding``: what a worker has yet to take or finish in a queue (run_until_empty waits on it)."""

from __future__ import annotations

import pytest
import redis

from taskq.queues.engine import Client, FakeClock, Inspector, ValidationError
from taskq.queues.engine.broker import Broker


def test_pending_active_and_due_tasks_count_and_later_ones_do_not(
    r: redis.Redis, redis_url: str, clock: FakeClock, broker: Broker
) -> None:
    client = Client(redis_url, clock=clock)
    inspector = Inspector(redis_url, clock=clock)
    client.enqueue_many([("a", b"1"), ("a", b"2"), ("a", b"3")])
    client.enqueue("a", process_in=60)
    leased = broker.run(broker.transitions.dequeue("default", 2, 30.0, "w1", "w1:1:"))
    assert len(leased) == 2
    assert inspector.outstanding("default") == 3  # 1 pending + 2 active; the scheduled one is not due
    broker.run(
        broker.transitions.retry("default", leased[0].id, leased[0].token, clock.now() + 120, "boom", worker="w1")
    )
    assert inspector.outstanding("default") == 2  # the retry is not due either
    clock.advance(61)
    assert inspector.outstanding("default") == 3  # the scheduled task is due now
    clock.advance(60)
    assert inspector.outstanding("default") == 4  # and the retry
    assert inspector.outstanding("elsewhere") == 0
    client.close()
    inspector.broker.close()


def test_a_bad_queue_name_is_refused(r: redis.Redis, redis_url: str) -> None:
    inspector = Inspector(redis_url)
    with pytest.raises(ValidationError):
        inspector.outstanding("x" * 10_000)
    inspector.broker.close()
