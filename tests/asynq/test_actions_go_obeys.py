"""A running Go asynq server obeys taskq's operator actions: a paused queue is left alone and taken again once
unpaused; a task run now is run; an archived or deleted task is never run; a cancelled task's handler sees its
context cancelled, and the task goes to retry with that error. All seen through Go's own Inspector and the runs
its handler records."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.inspection.task_actions import AsynqTaskActions
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.errors import FailedPreconditionError
from taskq.queues.engine.inspection.inspector_core import InspectorCore

from .go_asynq import GoAsynqError, wait_until


@pytest.fixture
def actions(r: redis.Redis, redis_url: str) -> Iterator[AsynqTaskActions]:
    broker = Broker(redis_url)
    yield AsynqTaskActions(InspectorCore(broker))
    broker.close()


def enqueue(go: Any, task_id: str, task_type: str = "t", payload: bytes = b"", **options: Any) -> None:
    go.enqueue({"type": task_type, "payload": base64.b64encode(payload).decode(), "task_id": task_id, **options})


def ran(go: Any, r: redis.Redis) -> list[str]:
    """The ids of the tasks Go's handler started, in order."""
    return [task_id for _, task_id, _, _ in go.runs(r)]


def test_a_paused_queue_is_left_alone_until_unpaused(go: Any, r: redis.Redis, actions: AsynqTaskActions) -> None:
    enqueue(go, "a1", queue="a")
    enqueue(go, "b1", queue="b")
    actions.pause_queue("op", "a")
    # Strict priority: a server takes a's task before b's, unless a is paused.
    with go.serving("-queues", "a=2,b=1", "-strict", "-concurrency", "1", "-name", "g1"):
        wait_until(lambda: "b1" in ran(go, r))
        assert "a1" not in ran(go, r)
        assert go("task", "a", "a1")["state"] == "pending"
        actions.unpause_queue("op", "a")
        wait_until(lambda: "a1" in ran(go, r))


def test_a_task_run_now_is_run_and_an_archived_or_deleted_one_never(
    go: Any, r: redis.Redis, actions: AsynqTaskActions
) -> None:
    for task_id in ("kept-out", "deleted", "marker"):  # in this order: a server takes pending tasks first in, first out
        enqueue(go, task_id)
    enqueue(go, "later", process_in_seconds=3600)
    enqueue(go, "revived", process_in_seconds=3600)
    actions.archive_task("op", "default", "kept-out")
    actions.delete_task("op", "default", "deleted")
    actions.archive_task("op", "default", "revived")
    with go.serving("-queues", "default=1", "-concurrency", "1"):
        wait_until(lambda: "marker" in ran(go, r))
        assert ran(go, r) == ["marker"]  # the two enqueued before it were gone from the pending list
        actions.run_task("op", "default", "later")
        actions.run_task("op", "default", "revived")
        wait_until(lambda: {"later", "revived"} <= set(ran(go, r)))
    assert go("task", "default", "kept-out")["state"] == "archived"
    with pytest.raises(GoAsynqError, match="not found"):
        go("task", "default", "deleted")


def test_bulk_actions_are_obeyed(go: Any, r: redis.Redis, actions: AsynqTaskActions) -> None:
    for n in range(3):
        enqueue(go, f"t{n}")
    assert actions.archive_all("op", "default", "pending") == 3
    enqueue(go, "marker")
    with go.serving("-queues", "default=1", "-concurrency", "1"):
        wait_until(lambda: "marker" in ran(go, r))
        assert ran(go, r) == ["marker"]
        assert actions.run_all("op", "default", "archived") == 3
        wait_until(lambda: {"t0", "t1", "t2"} <= set(ran(go, r)))


def test_a_cancelled_task_goes_to_retry_with_its_handlers_error(
    go: Any, r: redis.Redis, actions: AsynqTaskActions
) -> None:
    enqueue(go, "long", "sleep", b"600000", max_retry=3)  # sleeps ten minutes unless cancelled
    with go.serving("-queues", "default=1", "-retry-delay", "3600"):
        wait_until(lambda: "long" in ran(go, r))

        def cancelled() -> bool:
            # Asked again until the task is no longer active: the server may still be subscribing to asynq:cancel
            # when the handler starts, and a request nobody hears is lost.
            try:
                actions.cancel_task("default", "long")
            except FailedPreconditionError:
                return True
            return False

        wait_until(cancelled, timeout=30, interval=0.5)
    task = go("task", "default", "long")
    assert (task["state"], task["retried"], task["last_err"]) == ("retry", 1, "context canceled")
    assert ran(go, r) == ["long"]
