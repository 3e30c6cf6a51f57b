"""Each operator action's script over asynq's keys: seed the keys, act, compare every key of the database with
what asynq's Inspector leaves; a refused action changes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine import errors
from taskq.queues.engine.asynq.inspection import task_actions as module
from taskq.queues.engine.asynq.inspection.task_actions import AsynqTaskActions
from taskq.queues.engine.asynq.keys import ALL_QUEUES, CANCEL_CHANNEL, STATES, AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.inspection.inspector_core import InspectorCore

from .keyspace import seed_task, snapshot

NOW = 1_700_000_000
Q = AsynqQueueKeys("default")
DAY = 86_400


@pytest.fixture
def actions(broker: Broker) -> Iterator[AsynqTaskActions]:
    yield AsynqTaskActions(InspectorCore(broker))


def refused(r: redis.Redis, error: type[Exception], act: Callable[[], Any], match: str | None = None) -> None:
    """``act`` raises ``error`` and leaves every key as it was."""
    before = snapshot(r)
    with pytest.raises(error, match=match):
        act()
    assert snapshot(r) == before


def test_pause_then_unpause(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "a", "pending")
    before = snapshot(r)
    actions.pause_queue("op", "default")
    assert snapshot(r) == {**before, Q.paused.encode(): str(NOW).encode()}
    refused(r, errors.FailedPreconditionError, lambda: actions.pause_queue("op", "default"), "already paused")
    actions.unpause_queue("op", "default")
    assert snapshot(r) == before
    refused(r, errors.FailedPreconditionError, lambda: actions.unpause_queue("op", "default"), "not paused")


def test_an_unknown_queue_or_a_malformed_name_is_refused(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "a", "scheduled")
    refused(r, errors.QueueNotFoundError, lambda: actions.pause_queue("op", "nope"))
    refused(r, errors.QueueNotFoundError, lambda: actions.run_task("op", "nope", "a"))
    refused(r, errors.ValidationError, lambda: actions.run_task("op", "de{f}ault", "a"))
    refused(r, errors.ValidationError, lambda: actions.delete_task("op", "default", ""))


@pytest.mark.parametrize("state", ["scheduled", "retry", "archived", "completed"])
def test_run_task_makes_it_pending_at_the_head(r: redis.Redis, actions: AsynqTaskActions, state: str) -> None:
    seed_task(r, "default", "old", "pending")
    seed_task(r, "default", "a", state)
    seed_task(r, "default", "b", state)
    before = snapshot(r)
    actions.run_task("op", "default", "a")
    expected = dict(before)
    expected[Q.pending.encode()] = [b"a", b"old"]
    expected[Q.state(state).encode()] = [(b"b", float(NOW))]
    expected[Q.task("a").encode()] = {**before[Q.task("a").encode()], b"state": b"pending"}
    assert snapshot(r) == expected


def test_run_task_takes_an_aggregating_task_from_its_group(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "a", "aggregating", group="g1")
    seed_task(r, "default", "b", "aggregating", group="g2")
    seed_task(r, "default", "c", "aggregating", group="g2")
    before = snapshot(r)
    actions.run_task("op", "default", "a")  # the last of g1: the group leaves the group set
    actions.run_task("op", "default", "b")  # g2 keeps c
    expected = {k: v for k, v in before.items() if k != Q.group("g1").encode()}
    expected[Q.groups.encode()] = {b"g2"}
    expected[Q.group("g2").encode()] = [(b"c", float(NOW))]
    expected[Q.pending.encode()] = [b"b", b"a"]
    for task_id in ("a", "b"):
        expected[Q.task(task_id).encode()] = {**before[Q.task(task_id).encode()], b"state": b"pending"}
    assert snapshot(r) == expected


def test_one_task_refusals_change_nothing(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "run", "active")
    seed_task(r, "default", "wait", "pending")
    seed_task(r, "default", "old", "archived")
    refused(r, errors.FailedPreconditionError, lambda: actions.run_task("op", "default", "run"), "already running")
    refused(r, errors.FailedPreconditionError, lambda: actions.run_task("op", "default", "wait"), "already in pending")
    refused(r, errors.FailedPreconditionError, lambda: actions.archive_task("op", "default", "run"), "active")
    refused(r, errors.FailedPreconditionError, lambda: actions.archive_task("op", "default", "old"), "already archived")
    refused(r, errors.FailedPreconditionError, lambda: actions.delete_task("op", "default", "run"), "active")
    for act in (actions.run_task, actions.archive_task, actions.delete_task):
        refused(r, errors.TaskNotFoundError, lambda act=act: act("op", "default", "missing"))  # type: ignore[misc]


def test_a_task_missing_from_its_state_set_is_an_error_that_changes_nothing(
    r: redis.Redis, actions: AsynqTaskActions
) -> None:
    seed_task(r, "default", "a", "retry")
    r.zrem(Q.retry, "a")
    for act in (actions.run_task, actions.archive_task, actions.delete_task):
        refused(r, errors.EngineError, lambda act=act: act("op", "default", "a"), "not in")  # type: ignore[misc]


@pytest.mark.parametrize("state", ["pending", "scheduled", "retry", "completed"])
def test_archive_task_scores_it_by_now_and_trims_by_age(r: redis.Redis, actions: AsynqTaskActions, state: str) -> None:
    seed_task(r, "default", "a", state)
    seed_task(r, "default", "stale", "archived", score=NOW - 91 * DAY)
    seed_task(r, "default", "kept", "archived", score=NOW - 89 * DAY)
    before = snapshot(r)
    actions.archive_task("op", "default", "a")
    expected = {k: v for k, v in before.items() if k != Q.state(state).encode()}
    # The stale entry leaves the archive; its hash stays, as asynq leaves it.
    expected[Q.archived.encode()] = [(b"kept", float(NOW - 89 * DAY)), (b"a", float(NOW))]
    expected[Q.task("a").encode()] = {**before[Q.task("a").encode()], b"state": b"archived"}
    assert snapshot(r) == expected


def test_archive_keeps_one_less_than_the_limit_as_asynq_does(
    r: redis.Redis, actions: AsynqTaskActions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "ARCHIVE_MAX_SIZE", 3)
    for n in range(3):
        seed_task(r, "default", f"old{n}", "archived", score=NOW - 10 + n)
    seed_task(r, "default", "a", "aggregating", group="g")
    actions.archive_task("op", "default", "a")
    # ZREMRANGEBYRANK 0 -limit: asynq keeps the newest limit - 1.
    assert r.zrange(Q.archived, 0, -1) == [b"old2", b"a"]
    assert not r.exists(Q.group("g")) and not r.smembers(Q.groups)


def test_delete_task_releases_the_lock_it_holds_only(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "a", "scheduled", unique="asynq:{default}:unique:t:x")
    seed_task(r, "default", "b", "retry", unique="asynq:{default}:unique:t:y")
    r.set("asynq:{default}:unique:t:y", "someone-else")
    seed_task(r, "default", "c", "pending")
    seed_task(r, "default", "d", "aggregating", group="g")
    before = snapshot(r)
    for task_id in ("a", "b", "c", "d"):
        actions.delete_task("op", "default", task_id)
    gone = {Q.task(t).encode() for t in "abcd"} | {
        b"asynq:{default}:unique:t:x", Q.scheduled.encode(), Q.retry.encode(), Q.pending.encode(),
        Q.group("g").encode(), Q.groups.encode(),
    }  # fmt: skip
    assert snapshot(r) == {k: v for k, v in before.items() if k not in gone}


def test_delete_queue_rules(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "p", "pending")
    seed_task(r, "default", "s", "scheduled")
    seed_task(r, "default", "done", "completed")
    seed_task(r, "default", "run", "active")
    refused(r, errors.QueueNotEmptyError, lambda: actions.delete_queue("op", "default"))
    refused(r, errors.QueueNotEmptyError, lambda: actions.delete_queue("op", "default", force=True), "active")
    r.delete(Q.active, Q.lease, Q.task("run"))
    refused(r, errors.QueueNotEmptyError, lambda: actions.delete_queue("op", "default"))
    before = snapshot(r)
    actions.delete_queue("op", "default", force=True)
    # Completed tasks stay, as asynq leaves them; the queue leaves asynq:queues.
    gone = {Q.task("p").encode(), Q.task("s").encode(), Q.pending.encode(), Q.scheduled.encode(), ALL_QUEUES.encode()}
    assert snapshot(r) == {k: v for k, v in before.items() if k not in gone}


def test_delete_queue_of_an_empty_queue(r: redis.Redis, actions: AsynqTaskActions) -> None:
    r.sadd(ALL_QUEUES, "default", "other")
    actions.delete_queue("op", "default")
    assert snapshot(r) == {ALL_QUEUES.encode(): {b"other"}}


def test_edit_replaces_a_scheduled_payload_only(r: redis.Redis, actions: AsynqTaskActions) -> None:
    message = seed_task(r, "default", "a", "scheduled", unique="asynq:{default}:unique:t:x")
    before = snapshot(r)
    info = actions.edit_task("op", "default", "a", b"new")
    edited = WireTask.decode(message)
    edited.payload = b"new"
    assert snapshot(r) == {**before, Q.task("a").encode(): {**before[Q.task("a").encode()], b"msg": edited.encode()}}
    assert (info.state, info.payload, info.max_retry) == ("scheduled", b"new", 25)
    for option in ({"to_queue": "other"}, {"max_retry": 0}, {"timeout": 5.0}, {"task_type": "u"}):
        refused(r, errors.FormatUnsupportedError, lambda o=option: actions.edit_task("op", "default", "a", b"x", **o))  # type: ignore[misc]
    seed_task(r, "default", "b", "retry")
    refused(r, errors.FailedPreconditionError, lambda: actions.edit_task("op", "default", "b", b"x"), "scheduled")
    refused(r, errors.TaskNotFoundError, lambda: actions.edit_task("op", "default", "c", b"x"))


def test_edit_refuses_a_task_changed_since_it_was_read(
    r: redis.Redis, actions: AsynqTaskActions, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_task(r, "default", "a", "scheduled")
    send = actions.core.send

    def read_then_change(op: str, name: str, *args: Any) -> Any:
        reply = send(op, name, *args)
        if name == "hget":  # a Go worker's write lands between the read and the script
            r.hset(Q.task("a"), "msg", WireTask(type="t", payload=b"theirs", id="a").encode())
        return reply

    monkeypatch.setattr(actions.core, "send", read_then_change)
    with pytest.raises(errors.FailedPreconditionError, match="changed"):
        actions.edit_task("op", "default", "a", b"mine")
    assert WireTask.decode(r.hget(Q.task("a"), "msg")).payload == b"theirs"


def test_cancel_publishes_the_id_of_an_active_task(r: redis.Redis, actions: AsynqTaskActions) -> None:
    seed_task(r, "default", "a", "active")
    seed_task(r, "default", "b", "active")
    seed_task(r, "default", "c", "retry")
    listener = r.pubsub(ignore_subscribe_messages=True)
    listener.subscribe(CANCEL_CHANNEL)
    listener.get_message(timeout=1)
    try:
        assert actions.cancel_task("default", "a") >= 1
        refused(r, errors.FailedPreconditionError, lambda: actions.cancel_task("default", "c"), "not active")
        refused(r, errors.TaskNotFoundError, lambda: actions.cancel_task("default", "x"))
        assert actions.cancel_all("default") == 2
        heard = [listener.get_message(timeout=5) for _ in range(3)]
        assert sorted(m["data"] for m in heard if m) == [b"a", b"a", b"b"]
    finally:
        listener.close()


def five(r: redis.Redis, state: str, unique: bool = False, group: str = "") -> None:
    for n in range(5):
        lock = f"asynq:{{default}}:unique:t:{n}" if unique else ""
        seed_task(r, "default", f"t{n}", state, score=NOW + n, unique=lock, group=group)


def test_run_all_in_chunks_leaves_what_one_call_leaves(r: redis.Redis, actions: AsynqTaskActions) -> None:
    five(r, "retry")
    seed_task(r, "default", "old", "pending")
    before = snapshot(r)
    actions.chunk = 2
    assert actions.run_all("op", "default", "retry") == 5
    expected = {k: v for k, v in before.items() if k != Q.retry.encode()}
    expected[Q.pending.encode()] = [b"t4", b"t3", b"t2", b"t1", b"t0", b"old"]  # LPUSHed in score order
    for n in range(5):
        key = Q.task(f"t{n}").encode()
        expected[key] = {**before[key], b"state": b"pending"}
    assert snapshot(r) == expected


def test_archive_all_pending_in_chunks(r: redis.Redis, actions: AsynqTaskActions) -> None:
    five(r, "pending")
    before = snapshot(r)
    actions.chunk = 2
    assert actions.archive_all("op", "default", "pending") == 5
    expected = {k: v for k, v in before.items() if k != Q.pending.encode()}
    expected[Q.archived.encode()] = [(f"t{n}".encode(), float(NOW)) for n in range(5)]
    for n in range(5):
        key = Q.task(f"t{n}").encode()
        expected[key] = {**before[key], b"state": b"archived"}
    assert snapshot(r) == expected


@pytest.mark.parametrize(("state", "releases"), [("scheduled", True), ("completed", True), ("pending", False)])
def test_delete_all_releases_locks_where_asynq_does(
    r: redis.Redis, actions: AsynqTaskActions, state: str, releases: bool
) -> None:
    five(r, state, unique=True)
    seed_task(r, "default", "other", "retry")
    actions.chunk = 2
    assert actions.delete_all("op", "default", state) == 5
    locks = sorted(r.keys("asynq:{default}:unique:*"))
    assert locks == ([] if releases else sorted(f"asynq:{{default}}:unique:t:{n}".encode() for n in range(5)))
    assert sorted(r.keys("asynq:{default}:t:*")) == [Q.task("other").encode()]
    assert not r.exists(Q.state(state))


def test_aggregating_bulk_actions_take_one_group_or_every_group(r: redis.Redis, actions: AsynqTaskActions) -> None:
    five(r, "aggregating", group="g1")
    seed_task(r, "default", "x", "aggregating", group="g2")
    actions.chunk = 2
    assert actions.run_all("op", "default", "aggregating", group="g1") == 5
    assert r.smembers(Q.groups) == {b"g2"} and not r.exists(Q.group("g1"))
    assert r.lrange(Q.pending, 0, -1) == [b"t4", b"t3", b"t2", b"t1", b"t0"]
    assert actions.archive_all("op", "default", "aggregating") == 1
    assert r.hget(Q.task("x"), "state") == b"archived" and not r.exists(Q.groups)
    seed_task(r, "default", "y", "aggregating", group="g3")
    assert actions.delete_all("op", "default", "aggregating", group="g3") == 1
    assert not r.exists(Q.task("y"), Q.group("g3"), Q.groups)
    assert actions.delete_all("op", "default", "aggregating", group="none") == 0


def test_a_bulk_action_refuses_a_state_asynq_has_no_method_for(r: redis.Redis, actions: AsynqTaskActions) -> None:
    five(r, "pending")
    seed_task(r, "default", "done", "completed")
    refused(r, errors.ValidationError, lambda: actions.run_all("op", "default", "pending"))
    refused(r, errors.ValidationError, lambda: actions.run_all("op", "default", "completed"))
    refused(r, errors.ValidationError, lambda: actions.archive_all("op", "default", "completed"))
    refused(r, errors.ValidationError, lambda: actions.delete_all("op", "default", "active"))


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize(
    ("method", "takes"),
    [("run_task", module.RUNNABLE), ("archive_task", module.ARCHIVABLE), ("delete_task", module.DELETABLE)],
)
def test_the_state_tables_are_what_the_scripts_take(
    r: redis.Redis, actions: AsynqTaskActions, state: str, method: str, takes: frozenset[str]
) -> None:
    seed_task(r, "default", "a", state, group="g")
    act = getattr(actions, method)
    if state in takes:
        act("op", "default", "a")
    else:
        refused(r, errors.FailedPreconditionError, lambda: act("op", "default", "a"))
