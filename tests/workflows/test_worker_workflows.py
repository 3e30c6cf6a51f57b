"""Workflows and dependencies end to end with a worker Server in-process: chain order and results passed along,
parallel, chord, "B after A" with B submitted first, success and error callbacks, and what a failing member does to
each (no timed assertions: the tests wait for states with generous deadlines)."""

from __future__ import annotations

import threading

import pytest
from worker_support import state_of, wait_for

from taskq.queues.engine import (
    FailedPreconditionError,
    SkipRetry,
    Task,
    TaskIdConflictError,
    ValidationError,
    chain,
    chord,
    handler,
    parallel,
    sig,
)

Q = "default"


@pytest.fixture
def log(registry):
    """Handlers: ``add`` adds its payload to the sum of its inputs' results; ``boom`` fails for good; ``note``
    records callbacks. Every run is logged in order."""
    runs: list[tuple[str, object]] = []
    lock = threading.Lock()

    @handler("add", registry=registry)
    def add(task: Task) -> None:
        total = task.json() + sum(task.results or [])
        with lock:
            runs.append(("add", total))
        task.write_result(total)

    @handler("boom", registry=registry)
    def boom(task: Task) -> None:
        with lock:
            runs.append(("boom", None))
        raise SkipRetry("boom")

    @handler("note", registry=registry)
    def note(task: Task) -> None:
        with lock:
            runs.append(("note", {"results": task.results, "failure": task.failure, "payload": task.json()}))

    return runs


def finished(client, info):
    return client.wait_workflow(info.id, queue=Q, timeout=15)


def test_chain_runs_in_order_and_passes_results(make_server, client, log):
    make_server()
    info = client.submit(chain(sig("add", 1), sig("add", 10), sig("add", 100)), on_success=sig("note", "ok"))
    assert [m.state for m in info.members] == ["pending", "waiting", "waiting", "waiting"]
    done = finished(client, info)
    assert done.state == "succeeded" and done.results() == [1, 11, 111]
    wait_for(lambda: len(log) == 4, what="the on_success callback")
    assert log == [
        ("add", 1),
        ("add", 11),
        ("add", 111),
        ("note", {"results": [111], "failure": None, "payload": "ok"}),
    ]


def test_chain_without_passing_results(make_server, client, log):
    make_server()
    done = finished(client, client.submit(chain(sig("add", 1), sig("add", 2), pass_results=False)))
    assert done.results() == [1, 2]


def test_group_runs_all_and_can_be_waited_for(make_server, client, log):
    make_server()
    done = finished(client, client.submit(parallel(sig("add", 1), sig("add", 2), sig("add", 3))))
    assert done.state == "succeeded" and sorted(done.results()) == [1, 2, 3]


def test_chord_callback_gets_all_results_in_order(make_server, client, log):
    make_server()
    info = client.submit(chord([sig("add", 1), sig("add", 2), sig("add", 3)], sig("note", "sum")))
    done = finished(client, info)
    assert done.state == "succeeded"
    assert log[-1] == ("note", {"results": [1, 2, 3], "failure": None, "payload": "sum"})


def test_a_failed_chain_member_cancels_the_rest_and_runs_on_error(make_server, client, inspector, log):
    make_server()
    info = client.submit(
        chain(sig("add", 1), sig("boom"), sig("add", 5), sig("add", 6)),
        on_success=sig("note", "ok"),
        on_error=sig("note", "failed"),
    )
    done = finished(client, info)
    assert done.state == "failed" and done.failed_member == info.members[1].id and done.error == "SkipRetry: boom"
    assert [m.state for m in done.members][:5] == ["succeeded", "failed", "cancelled", "cancelled", "cancelled"]
    wait_for(
        lambda: any(run[1] and run[1].get("payload") == "failed" for run in log if run[0] == "note"),
        what="the on_error callback",
    )
    failure = next(run[1]["failure"] for run in log if run[0] == "note")
    assert failure == {"task": info.members[1].id, "type": "boom", "error": "SkipRetry: boom"}
    assert ("add", 5) not in log and ("add", 6) not in log  # nothing after the failed member ran
    cancelled = inspector.get_task(Q, info.members[2].id)
    assert cancelled.state == "archived" and cancelled.last_error.startswith("cancelled: workflow member")
    assert [run[1]["payload"] for run in log if run[0] == "note"] == ["failed"]  # on_success never ran


def test_a_failed_chord_member_skips_the_callback(make_server, client, log):
    make_server()
    info = client.submit(
        chord([sig("add", 1), sig("boom"), sig("add", 3)], sig("note", "sum")), on_error=sig("note", "failed")
    )
    done = finished(client, info)
    assert done.state == "failed"
    wait_for(lambda: any(r[0] == "note" for r in log), what="the on_error callback")
    notes = [r[1]["payload"] for r in log if r[0] == "note"]
    assert notes == ["failed"]  # the chord callback never ran
    assert done.member(info.members[3].id).state == "cancelled"


def test_b_submitted_before_a_waits_for_it(make_server, client, inspector, log):
    b = client.enqueue("add", 10, after=["order-7"], pass_results=True)
    assert b.state == "waiting" and inspector.queue_info(Q).waiting == 1
    assert [t.id for t in inspector.list_tasks(Q, "waiting")] == [b.id]
    make_server()
    a = client.enqueue("add", 1, task_id="order-7", retention=60)
    wait_for(lambda: state_of(inspector, Q, b.id) is None, what="B ran after A")
    assert log == [("add", 1), ("add", 11)]
    # A succeeded and is kept (retention): a task submitted after it now runs at once, with its result.
    c = client.enqueue("add", 100, after=[a.id], pass_results=True)
    wait_for(lambda: ("add", 101) in log, what="C ran")
    assert state_of(inspector, Q, c.id) is None


def test_dependents_of_a_failed_task_are_archived(make_server, client, inspector, log):
    a = client.enqueue("boom", task_id="a")
    b = client.enqueue("add", 1, after=[a.id])
    c = client.enqueue("add", 2, after=[b.id])
    make_server()
    wait_for(lambda: state_of(inspector, Q, c.id) == "archived", what="the failure cascaded")
    assert inspector.get_task(Q, b.id).last_error == "dependency a failed: SkipRetry: boom"
    assert ("add", 1) not in log and ("add", 2) not in log
    with pytest.raises(FailedPreconditionError):
        client.enqueue("add", 3, after=[a.id])  # a failed: a task waiting for it could never run


def test_a_dependency_cycle_is_refused_and_writes_nothing(client, r):
    client.enqueue("add", 1, task_id="b", after=["a"])  # b first, waiting for an a not submitted yet
    client.enqueue("add", 2, task_id="c", after=["b"])
    keys_before = sorted(r.keys())
    with pytest.raises(FailedPreconditionError, match="cycle through a: these tasks would wait for each other"):
        client.enqueue("add", 3, task_id="a", after=["c"])  # a -> b -> c -> a
    assert sorted(r.keys()) == keys_before
    assert client.enqueue("add", 3, task_id="a").state == "pending"  # without the cycle, a is welcome


def test_bad_workflows_are_refused_and_write_nothing(client, inspector, r):
    with pytest.raises(ValidationError):
        client.submit(chain())
    with pytest.raises(ValidationError):
        client.submit(chain(sig("add", 1), sig("", 2)))
    with pytest.raises(ValidationError):
        sig("add", 1, process_in=5)
    with pytest.raises(ValidationError):
        client.enqueue("add", 1, after="not-a-list")
    client.enqueue("add", 1, task_id="taken")
    keys_before = sorted(r.keys())
    with pytest.raises(TaskIdConflictError):
        client.submit(chain(sig("add", 1), sig("add", 2, task_id="taken")))
    assert sorted(r.keys()) == keys_before


def test_inspector_reads_a_workflow(client, inspector):
    info = client.submit(chord([sig("add", 1), sig("add", 2)], sig("note")), workflow_id="wf-1")
    read = inspector.workflow(Q, "wf-1")
    assert read.state == "running" and read.left == 3
    assert [(m.type, m.state) for m in read.members] == [("add", "pending"), ("add", "pending"), ("note", "waiting")]
    assert read.members[2].after == [info.members[0].id, info.members[1].id]
    assert [m.type for m in read.current] == ["add", "add"]
    assert inspector.workflows(Q)[0][0] == "wf-1"
