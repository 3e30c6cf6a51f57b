"""A task's attempts from its events: starts, ends, outcomes, errors, the worker and lease of each; and the lease
token the dequeue script writes into the start's event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from taskq.queues.engine import Client
from taskq.queues.engine.inspector import TaskEvent
from taskq.queues.engine.timeline import attempts_of

T = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def ev(
    frm: str, to: str, seconds: float, worker: str = "", error: str = "", lease: str = "", started: float | None = None
) -> TaskEvent:
    began = None if started is None else T + timedelta(seconds=started)
    return TaskEvent("a", "email", frm, to, T + timedelta(seconds=seconds), worker, error, lease, "", began)


def test_attempts_from_start_to_end_with_their_outcomes():
    events = [
        ev("", "pending", 0),
        ev("pending", "active", 1, "w1", lease="t-1"),
        ev("active", "retry", 3.5, "w1", error="SMTP 451"),
        ev("retry", "pending", 10, "forwarder"),
        ev("pending", "active", 11, "w2", lease="t-2"),
        ev("active", "pending", 12, "recoverer", error="lease expired"),
        ev("pending", "active", 13, "w1", lease="t-3"),
        ev("active", "done", 13.75, "w1", started=13.5),  # prefetched: it waited half a second for a slot
    ]
    first, second, third = attempts_of(events)
    assert (first.number, first.worker, first.lease, first.outcome, first.error, first.seconds) == (
        1, "w1", "t-1", "failed, to retry", "SMTP 451", 2.5,
    )  # fmt: skip
    assert (second.worker, second.ended_by, second.error) == ("w2", "recoverer", "lease expired")
    assert second.outcome.startswith("put back")
    assert (third.outcome, third.seconds, third.lease) == ("succeeded", 0.25, "t-3")
    assert (third.dequeued, third.started) == (T + timedelta(seconds=13), T + timedelta(seconds=13.5))


def test_a_running_attempt_has_no_end():
    (only,) = attempts_of([ev("", "pending", 0), ev("pending", "active", 1, "w1", lease="t")])
    assert (only.outcome, only.ended, only.seconds) == ("running", None, None)
    assert attempts_of([]) == [] and attempts_of([ev("", "scheduled", 0)]) == []


def test_the_start_event_carries_the_lease_token(r, broker, redis_url, clock):
    with Client(redis_url, clock=clock) as client:
        client.enqueue("email", {}, task_id="a")
    (leased,) = broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))
    ((_id, fields),) = r.xrevrange("tq:{default}:events", count=1)
    assert fields[b"to"] == b"active" and fields[b"lease"] == leased.token.encode() == b"tok-1"


def test_the_end_event_carries_when_the_handler_started(r, broker, redis_url, clock):
    with Client(redis_url, clock=clock) as client:
        client.enqueue("email", {}, task_id="a", retention=60)
        client.enqueue("email", {}, task_id="b")
    leased = broker.run(broker.transitions.dequeue("default", 2, 30, "w1", "tok-"))
    tokens = {t.id: t.token for t in leased}
    broker.run(broker.transitions.complete("default", [("a", tokens["a"], 60.0)], "w1", [1_700_000_000.5]))
    broker.run(broker.transitions.done("default", [("b", tokens["b"])], "w1"))  # a caller that does not know
    ends = [f for _id, f in r.xrange("tq:{default}:events") if f[b"from"] == b"active"]
    assert ends[0][b"started"] == b"1700000000500" and b"started" not in ends[1]
