"""The record a deleted task leaves when an operator had acted on it, read back through ``Inspector.task_record``:
written by the real scripts (archive, edit, retry, run, done), on the test's clock; and a record that cannot be
read is no record (the page falls back to the task's events), not an error."""

from __future__ import annotations

from datetime import timedelta

from taskq.queues.engine import Client
from taskq.queues.engine.clock import from_ms
from taskq.queues.engine.task_records import TaskRecord

from .task_state import NOW, NOW_MS


def fail_then_succeed(client: Client, broker, clock) -> str:
    """A task that failed into the archive (after 1.5 s), was edited and run by an operator, failed once more into
    retry, was run again, and succeeded (after 0.25 s) on worker w2: deleted, no retention."""
    ops = broker.transitions
    task_id = client.enqueue("email", {"to": "ada"}).id
    (leased,) = broker.run(ops.dequeue("default", 1, 30, "w1", "tok-"))
    clock.advance(1.5)
    broker.run(ops.archive("default", task_id, leased.token, "SMTP 550", worker="w1", started=clock.now() - 1.5))
    clock.advance(10)
    broker.run(ops.edit_task("default", task_id, b'{"to":"bob"}', b'{"v":1,"created":%d}' % NOW_MS, "console:otto"))
    (leased,) = broker.run(ops.dequeue("default", 1, 30, "w1", "tok-"))
    clock.advance(1)
    broker.run(ops.retry("default", task_id, leased.token, clock.now(), "SMTP 451", worker="w1"))
    clock.advance(5)
    broker.run(ops.run_task("default", task_id, "console:otto"))
    (leased,) = broker.run(ops.dequeue("default", 1, 30, "w2", "tok-"))
    clock.advance(0.25)
    broker.run(ops.done("default", [(task_id, leased.token)], "w2", [clock.now() - 0.25]))
    return task_id


def test_the_record_holds_each_failure_each_action_and_the_end(inspector, broker, clock, redis_url):
    with Client(redis_url, clock=clock) as client:
        task_id = fail_then_succeed(client, broker, clock)
    record = inspector.task_record("default", task_id)
    assert record is not None and (record.type, record.outcome, record.by) == ("email", "done", "w2")
    assert record.created == from_ms(NOW_MS) and record.at == from_ms(round((NOW + 17.75) * 1000))
    # The record's TTL (an hour) runs on Redis's clock, the test's does not move it: within a minute of the hour.
    assert timedelta(minutes=59) < record.expires_at - record.at <= timedelta(hours=1)
    assert [(e.kind, e.error, e.to, e.by) for e in record.trail] == [
        ("failed", "SMTP 550", "archived", ""),
        ("edit", "", "", "console:otto"),
        ("failed", "SMTP 451", "retry", ""),
        ("run", "", "", "console:otto"),
    ]
    attempts = record.attempts()
    assert [(a.number, a.outcome, a.error, a.worker) for a in attempts] == [
        (1, "failed, archived", "SMTP 550", ""),
        (2, "failed, to retry", "SMTP 451", ""),
        (3, "succeeded", "", "w2"),
    ]
    assert attempts[0].seconds == 1.5 and attempts[2].seconds == 0.25
    assert [(e.from_state, e.to_state, e.worker) for e in record.events()] == [
        ("active", "archived", ""),
        ("archived", "pending", "console:otto"),
        ("active", "retry", ""),
        ("retry", "pending", "console:otto"),
        ("active", "done", "w2"),
    ]


def test_a_task_no_operator_touched_leaves_none(inspector, broker, clock, redis_url):
    with Client(redis_url, clock=clock) as client:
        task_id = client.enqueue("email", {"to": "ada"}).id
    (leased,) = broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))
    broker.run(broker.transitions.done("default", [(task_id, leased.token)], "w1"))
    assert inspector.task_record("default", task_id) is None


def test_a_record_that_cannot_be_read_is_no_record(inspector, broker, clock, redis_url, r):
    with Client(redis_url, clock=clock) as client:
        client.enqueue("email", {})  # the queue exists
    key = broker.keys.queue("default").task_record("x")
    for stored in (b"not json", b"[1, 2]", b'"text"'):
        r.set(key, stored, px=60_000)
        assert inspector.task_record("default", "x") is None
    now = from_ms(NOW_MS)
    assert TaskRecord.parse("default", "x", b'{"trail": {"not": "a list"}, "at": "soon"}', 0, now) == TaskRecord(
        "x", "default", "", "", None
    )
