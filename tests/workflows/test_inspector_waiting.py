"""The Inspector on tasks waiting for their dependencies (issue 16): counted as a state and in the size, listed
with the dependencies they still wait for, deleted and run now, and refused by name where that cannot be."""

from __future__ import annotations

import pytest

from taskq.queues.engine import (
    STATES,
    Client,
    FailedPreconditionError,
    Inspector,
    TaskNotFoundError,
    ValidationError,
    chain,
    sig,
)
from taskq.queues.engine.events import EventStreams
from tests.engine.dbstate import dump


@pytest.fixture
def waiting(client: Client) -> dict[str, str]:
    """A (pending) and C (done) are dependencies of B; D waits for B. Ids by name."""
    a = client.enqueue("fetch", {"n": 1}, task_id="A")
    c = client.enqueue("fetch", {"n": 2}, task_id="C")
    b = client.enqueue("store", {"n": 3}, task_id="B", after=[a.id, c.id])
    d = client.enqueue("mail", {"n": 4}, task_id="D", after=[b.id])
    return {"A": a.id, "B": b.id, "C": c.id, "D": d.id}


def test_waiting_is_a_state_counted_in_the_size(inspector: Inspector, waiting):
    assert "waiting" in STATES
    info = inspector.queue_info("default")
    assert info.counts()["waiting"] == 2
    assert info.counts()["pending"] == 2
    assert info.size == 4


def test_the_live_counts_have_the_waiting_state_and_count_it_in_the_size(redis_url: str, waiting):
    """What the live console pushes: before, its size left waiting tasks out, so the live page disagreed with a
    fresh load."""
    streams = EventStreams(redis_url)
    try:
        counts = streams.counts(["default"])["default"]
    finally:
        streams.close()
    assert (counts["waiting"], counts["pending"], counts["size"]) == (2, 2, 4)


def test_listed_waiting_tasks_name_the_dependencies_still_awaited(inspector: Inspector, waiting):
    listed = inspector.list_tasks("default", "waiting")
    assert [(t.id, t.after, t.waiting_on) for t in listed] == [("B", ["A", "C"], ["A", "C"]), ("D", ["B"], ["B"])]
    # A worker takes A and C, and C succeeds: B no longer waits for it.
    broker = inspector.broker
    leased = broker.run(broker.transitions.dequeue("default", 2, 30, "w1", "tok-"))
    broker.run(broker.transitions.done("default", [(t.id, t.token) for t in leased if t.id == "C"], "w1"))
    assert inspector.get_task("default", "B").waiting_on == ["A"]
    assert [(t.id, t.waiting_on) for t in inspector.list_tasks("default", "active")] == [("A", [])]


def test_deleting_a_waiting_task_archives_its_dependents(inspector: Inspector, waiting):
    inspector.delete_task("default", "B")
    with pytest.raises(TaskNotFoundError):
        inspector.get_task("default", "B")
    d = inspector.get_task("default", "D")
    assert d.state == "archived"
    assert d.last_error == "dependency B failed: deleted by test"
    info = inspector.queue_info("default")
    assert (info.waiting, info.archived, info.size) == (0, 1, 3)


def test_running_a_waiting_task_now_leaves_its_dependents_waiting(inspector: Inspector, waiting):
    inspector.run_task("default", "B")
    b = inspector.get_task("default", "B")
    assert (b.state, b.waiting_on) == ("pending", [])
    d = inspector.get_task("default", "D")
    assert (d.state, d.waiting_on) == ("waiting", ["B"])


def test_bad_input_is_refused_by_name_and_changes_nothing(r, client: Client, inspector: Inspector, waiting):
    client.submit(chain(sig("x"), sig("y")), on_error=sig("alert", task_id="E"), workflow_id="wf")
    before = dump(r)
    with pytest.raises(TaskNotFoundError):
        inspector.run_task("default", "nope")
    with pytest.raises(TaskNotFoundError):
        inspector.delete_task("default", "nope")
    with pytest.raises(FailedPreconditionError, match="task is pending, it cannot be run now"):
        inspector.run_task("default", "A")
    with pytest.raises(FailedPreconditionError, match="on_error callback of workflow wf"):
        inspector.run_task("default", "E")
    with pytest.raises(ValidationError):
        inspector.list_tasks("default", "waitin")
    assert dump(r) == before
