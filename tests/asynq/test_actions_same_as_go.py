"""Each operator action does to asynq's keys what Go asynq's own Inspector does: one state is seeded through Go,
then kept; Go's Inspector acts on it and every key is read; the state is put back, taskq's action acts, and every
key and value must be the same (the time an archive or a pause records may differ by the second it ran in)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.inspection.task_actions import AsynqTaskActions
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.inspection.inspector_core import InspectorCore

from . import go_asynq
from .conftest import Go
from .keyspace import restore, saved, snapshot

Q = AsynqQueueKeys("default")
#: Seconds two records of "now" may differ by: Go's action and ours run a moment apart.
CLOCK_SLACK = 3.0


@pytest.fixture
def ours(r: redis.Redis, redis_url: str) -> Iterator[AsynqTaskActions]:
    broker = Broker(redis_url)  # the real clock, as Go's Inspector has
    actions = AsynqTaskActions(InspectorCore(broker))
    actions.chunk = 2  # bulk actions in several calls must leave what Go's one call leaves
    yield actions
    broker.close()


def enqueue(go: Any, task_id: str, task_type: str = "t", **options: Any) -> None:
    go.enqueue({"type": task_type, "payload": base64.b64encode(b"payload").decode(), "task_id": task_id, **options})


@pytest.fixture(scope="module")
def seed(go_binary: str, redis_url: str) -> Iterator[dict[bytes, tuple[bytes, int]]]:
    """A queue with tasks in every state, written by Go (its client, Inspector and a server): the keys, kept for
    ``restore``. Written once for the module: a Go server takes seconds to start and stop."""
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    go = Go(redis_url)
    try:
        enqueue(go, "f1", "fail", max_retry=3)
        enqueue(go, "c1", retention_seconds=3600)
        with go.serving("-queues", "default=1", "-retry-delay", "3600"):
            go_asynq.wait_until(lambda: r.zcard(Q.retry) == 1 and r.zcard(Q.completed) == 1)
        for task_id in ("p1", "p2", "p3"):
            enqueue(go, task_id)
        enqueue(go, "u1", unique_seconds=3600)
        for task_id in ("s1", "s2", "arch", "arch2"):
            enqueue(go, task_id, process_in_seconds=3600)
        enqueue(go, "s3", "unique", unique_seconds=3600, process_in_seconds=3600)
        go("act", "archive", "default", "arch")
        go("act", "archive", "default", "arch2")
        for task_id, group in (("a1", "g1"), ("a2", "g1"), ("a3", "g2")):
            enqueue(go, task_id, group=group)
        states = {state: r.hget(Q.task(task_id), "state") for state, task_id in _ONE_EACH.items()}
        assert states == {state: state.encode() for state in _ONE_EACH}
        yield saved(r)
    finally:
        r.flushdb()
        r.close()


@pytest.fixture
def seeded(r: redis.Redis, seed: dict[bytes, tuple[bytes, int]]) -> dict[bytes, tuple[bytes, int]]:
    """The seed, put back into the empty test database."""
    restore(r, seed)
    return seed


_ONE_EACH = {"pending": "p1", "scheduled": "s1", "retry": "f1", "archived": "arch", "completed": "c1"}
_ONE_EACH["aggregating"] = "a1"

Step = Callable[[Any, AsynqTaskActions], Any]


def both(go_args: tuple[str, ...], ours: Callable[[AsynqTaskActions], Any]) -> tuple[list[Step], list[Step]]:
    """One action: Go's Inspector with ``go_args``, or ``ours``."""
    return [lambda go, _: go("act", *go_args)], [lambda _, actions: ours(actions)]


CASES: dict[str, tuple[list[Step], list[Step]]] = {
    "pause": both(("pause", "default"), lambda a: a.pause_queue("op", "default")),
    "delete-queue": both(("delete-queue", "default", "true"), lambda a: a.delete_queue("op", "default", True)),
    "update": both(("update", "default", "s1", "new"), lambda a: a.edit_task("op", "default", "s1", b"new")),
}
CASES["unpause"] = (
    [lambda go, _: go("act", "pause", "default"), lambda go, _: go("act", "unpause", "default")],
    [lambda go, _: go("act", "pause", "default"), lambda _, a: a.unpause_queue("op", "default")],
)
for _task in ("s1", "f1", "arch", "c1", "a1", "a3"):
    CASES[f"run {_task}"] = both(("run", "default", _task), lambda a, t=_task: a.run_task("op", "default", t))
for _task in ("p2", "s1", "f1", "c1", "a1", "a3"):
    CASES[f"archive {_task}"] = both(
        ("archive", "default", _task), lambda a, t=_task: a.archive_task("op", "default", t)
    )
for _task in ("p2", "u1", "s3", "f1", "arch", "c1", "a1", "a3"):
    CASES[f"delete {_task}"] = both(("delete", "default", _task), lambda a, t=_task: a.delete_task("op", "default", t))
_BULK = {
    "run-all": ("scheduled", "retry", "archived"),
    "archive-all": ("pending", "scheduled", "retry"),
    "delete-all": ("pending", "scheduled", "retry", "archived", "completed"),
}
for _action, _states in _BULK.items():
    _method = _action.replace("-", "_")
    for _state in _states:
        CASES[f"{_action} {_state}"] = both(
            (_action, "default", _state), lambda a, m=_method, s=_state: getattr(a, m)("op", "default", s)
        )
    CASES[f"{_action} group"] = both(
        (_action, "default", "aggregating", "g1"),
        lambda a, m=_method: getattr(a, m)("op", "default", "aggregating", group="g1"),
    )


def same_keys(theirs: dict[bytes, Any], mine: dict[bytes, Any]) -> None:
    """Every key and value alike, but for the archive's scores and the paused mark, each a "now" of its own."""
    assert sorted(mine) == sorted(theirs)
    for key, value in theirs.items():
        if key == Q.archived.encode():
            assert dict(mine[key]).keys() == dict(value).keys(), key
            for member, score in value:
                assert abs(dict(mine[key])[member] - score) <= CLOCK_SLACK, (key, member)
        elif key == Q.paused.encode():
            assert abs(int(mine[key]) - int(value)) <= CLOCK_SLACK
        else:
            assert mine[key] == value, key


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_action_leaves_what_gos_inspector_leaves(
    go: Any, r: redis.Redis, seeded: dict[bytes, tuple[bytes, int]], ours: AsynqTaskActions, case: str
) -> None:
    go_steps, our_steps = CASES[case]
    for step in go_steps[:-1]:
        step(go, ours)
    before = snapshot(r)
    go_steps[-1](go, ours)
    theirs = snapshot(r)
    assert theirs != before, "Go's action changed nothing: the case proves nothing"
    restore(r, seeded)
    for step in our_steps:
        step(go, ours)
    same_keys(theirs, snapshot(r))
