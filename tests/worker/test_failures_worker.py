"""What a real worker stores of a failed attempt: the traceback (redacted by its TASKS_REDACT rules) and the error
group, named by the innermost frame in the handler's module; in the thread pool and across a handler process."""

from __future__ import annotations

import json

import process_tasks
from worker_support import state_of, wait_for

from taskq.queues.engine import Task, handler
from taskq.queues.engine.redaction import MASK, Redaction

Q = "default"
SECRET = "4111-1111-1111-1111"


def never(*_args: object) -> float:
    return 10_000.0


def _charge(card: str, order: int) -> None:
    raise ValueError(f"order {order}: card {card} declined")


def test_the_worker_stores_a_redacted_traceback_and_counts_the_error_group(make_server, registry, client, inspector):
    @handler("shop:charge", registry=registry, retry_delay=never)
    def charge(task: Task) -> None:
        data = task.json()
        _charge(data["card"], data["order"])

    make_server(redaction=Redaction.build(keys=["card"]))
    ids = [client.enqueue("shop:charge", {"card": SECRET, "order": n}).id for n in (17, 4242)]
    for task_id in ids:
        wait_for(lambda task_id=task_id: state_of(inspector, Q, task_id) == "retry", what="failure in retry")

    task = inspector.get_task(Q, ids[0])
    assert task.last_error == f"ValueError: order 17: card {MASK} declined"
    assert task.last_traceback.startswith("Traceback (most recent call last):")
    assert "in _charge" in task.last_traceback and task.last_traceback.endswith(f"card {MASK} declined\n")
    events = inspector.task_events(Q, ids[0])
    assert SECRET not in task.last_traceback + task.last_error + json.dumps([e.error for e in events])

    (group,) = inspector.error_groups(Q)
    assert (group.kind, group.message, group.frame) == (
        "ValueError",
        f"order <n>: card {MASK} declined",
        f"{__name__}:_charge",
    )
    # The sample is the group's latest failure: the two tasks run side by side, so either may fail last.
    assert (group.task_type, group.count) == ("shop:charge", 2) and group.sample in ids
    assert group.fingerprint == task.error_fingerprint == inspector.get_task(Q, ids[1]).error_fingerprint


def test_a_handler_process_sends_its_traceback_back(make_server, client, inspector):
    make_server(registry_=process_tasks.registry, pool="process", concurrency=2)
    info = client.enqueue("proc:fail", max_retry=3)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="failure in retry")
    task = inspector.get_task(Q, info.id)
    assert "in fail" in task.last_traceback and task.last_traceback.endswith("ValueError: bad input\n")
    (group,) = inspector.error_groups(Q)
    assert (group.frame, group.count, group.sample) == ("process_tasks:fail", 1, info.id)
