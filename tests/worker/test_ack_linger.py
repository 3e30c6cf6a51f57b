"""The acker's linger: a small batch waits ``linger`` seconds for the outcomes finished meanwhile, so they go in
one call; an outcome whose handler slot was handed over (fetch-on-ack) is written without waiting. Real Redis;
the batches the acker writes are recorded by a spy around ``Acker.write`` (the real method runs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from worker_support import state_of, wait_for

from taskq.queues.engine import Client, FakeClock, Task, TaskMessage
from taskq.queues.engine.broker import Broker
from taskq.worker.acker import Acker
from taskq.worker.attempt import Attempt, Outcome

Q = "default"


@pytest.fixture
def broker(redis_url: str, clock: FakeClock) -> Iterator[Broker]:
    broker = Broker(redis_url, clock=clock)
    yield broker
    broker.close()


def leased_attempts(broker: Broker, client: Client, clock: FakeClock, n: int) -> list[Attempt]:
    """``n`` tasks enqueued and leased, as the fetch thread would hold them."""
    for _ in range(n):
        client.enqueue("step", queue=Q)
    leased = broker.run(broker.transitions.dequeue(Q, n, 30.0, "w1", "w1:1:"))
    attempts = []
    for item in leased:
        message = TaskMessage.decode(item.id, Q, item.type, item.payload, item.options)
        attempts.append(Attempt(item, Q, Task(message, item.retried), None, None, clock.now()))
    return attempts


def running_acker(broker: Broker, linger: float) -> tuple[Acker, list[int]]:
    """An acker with ``linger``, started, and the size of every batch it writes."""
    acker = Acker(broker, "w1", on_written=lambda _attempt: None, linger=linger)
    batches: list[int] = []
    original = acker.write

    def spy(batch):
        batches.append(len(batch))
        return original(batch)

    acker.write = spy  # type: ignore[method-assign]
    acker.start()
    return acker, batches


def test_outcomes_that_arrive_while_the_acker_lingers_go_in_one_call(broker, client, clock, inspector):
    attempts = leased_attempts(broker, client, clock, 3)
    acker, batches = running_acker(broker, linger=1.0)  # longer than a worker may (0.1 s): a margin for busy CI
    try:
        acker.submit(attempts[0], Outcome("success"))
        wait_for(lambda: acker.outbox.waiting() == 0, interval=0.001, what="the acker took the first outcome")
        for attempt in attempts[1:]:  # while it lingers: without the linger it has written the first alone
            acker.submit(attempt, Outcome("success"))
        assert acker.drain(timeout=10)
    finally:
        acker.stop()
    assert batches == [3]
    assert [state_of(inspector, Q, a.id) for a in attempts] == [None, None, None]  # done: no retention, gone


def test_an_outcome_whose_slot_was_handed_over_is_written_without_lingering(broker, client, clock, inspector):
    (attempt,) = leased_attempts(broker, client, clock, 1)
    acker, batches = running_acker(broker, linger=60.0)  # were it to linger here, the drain below would time out
    try:
        attempt.holds_slot = True
        acker.submit(attempt, Outcome("success"))
        assert acker.drain(timeout=10)
    finally:
        acker.stop()
    assert batches == [1]
    assert state_of(inspector, Q, attempt.id) is None
