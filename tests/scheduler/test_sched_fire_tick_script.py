"""State table of the fire_tick script: every key of the database before and after one call."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine import FailedPreconditionError, TaskIdConflictError
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.producer import unique_digest
from taskq.queues.engine.scheduler_store import SchedulerStore
from tests.engine.dbstate import Hash, Set, Stream, Volatile, ZSet, assert_db, seed
from tests.engine.task_state import NOW_MS, Q, counts, event, fake_clock

ENTRY = make_entry("@every 10s", "email", {"to": "ada"})
UNIQUE_ENTRY = make_entry("@every 10s", "email", {"to": "ada"}, options={"unique": 60})
TICK = NOW_MS - 500
TASK = ENTRY.task_id(TICK)
HISTORY = Q.cron_history(ENTRY.id)


def record(outcome: str, task_id: str = TASK) -> str:
    return json.dumps({"tick": TICK, "task_id": task_id, "at": NOW_MS, "outcome": outcome}, separators=(",", ":"))


def fired(entry=ENTRY) -> dict:
    task_id = entry.task_id(TICK)
    history = Q.cron_history(entry.id)
    fields = {
        "type": "email",
        "msg": json.dumps({"created": NOW_MS}, separators=(",", ":")),
        "payload": '{"to":"ada"}',
        "state": "pending",
        "since": str(NOW_MS),
    }
    return {
        Q.task(task_id): Hash(fields),
        Q.pending: [task_id],
        Q.type_counts: counts(pending__email=1),
        Q.events: Stream([event(task_id, "", "pending", worker="scheduler:test")]),
        Q.cron_last: Hash({entry.id: str(TICK)}),
        history: ZSet({record("enqueued", task_id): float(TICK)}),
    }


@pytest.fixture
def fire(r, redis_url):
    broker = Broker(redis_url, clock=fake_clock())
    store = SchedulerStore(broker, history_cap=2)
    yield lambda entry=ENTRY, tick=TICK: store.fire(entry, tick / 1000, actor="scheduler:test")
    broker.close()


def test_fires_a_new_tick(r, fire):
    assert fire() == "enqueued"
    after = fired()
    after[Q.task(TASK)]["msg"] = r.hget(Q.task(TASK), "msg").decode()  # the message's encoded options
    assert_db(r, after | {"tq:queues": Set({"default"})})  # a new queue is listed


@pytest.mark.parametrize("last", [TICK, TICK + 10_000], ids=["same-tick", "later-tick"])
def test_refuses_a_tick_already_handled_and_changes_nothing(r, fire, last):
    before = {Q.cron_last: Hash({ENTRY.id: str(last)})}
    seed(r, before)
    with pytest.raises(TaskIdConflictError, match="handled already"):
        fire()
    assert_db(r, before)


def test_marks_the_tick_handled_when_its_task_exists(r, fire):
    before = {
        Q.task(TASK): Hash({"type": "email", "state": "pending"}),
        Q.pending: [TASK],
        Q.cron_last: Hash({ENTRY.id: str(TICK - 10_000)}),
    }
    seed(r, before)
    assert fire() == "exists"
    assert_db(r, before | {Q.cron_last: Hash({ENTRY.id: str(TICK)})})


def test_a_held_unique_lock_records_a_duplicate_without_a_task(r, fire):
    lock = Q.unique("email", unique_digest(b'{"to":"ada"}'))  # the lock an earlier run of the entry holds
    before = {Q.cron_last: Hash({UNIQUE_ENTRY.id: str(TICK - 10_000)}), lock: Volatile("earlier-task")}
    seed(r, before)
    assert fire(UNIQUE_ENTRY) == "duplicate"
    task_id = UNIQUE_ENTRY.task_id(TICK)
    assert_db(
        r,
        before
        | {
            Q.cron_last: Hash({UNIQUE_ENTRY.id: str(TICK)}),
            Q.cron_history(UNIQUE_ENTRY.id): ZSet({record("duplicate", task_id): float(TICK)}),
        },
    )


def test_history_is_capped(r, fire):
    for n in range(4):
        fire(tick=TICK + n * 10_000)
    scores = [s for _m, s in r.zrange(HISTORY, 0, -1, withscores=True)]
    assert scores == [TICK + 20_000, TICK + 30_000]  # cap 2: the newest kept


# -- pausing and running by hand --------------------------------------------------------------------------------

PAUSE = '{"at":1,"by":"cli:ada"}'


def test_a_paused_entry_marks_its_tick_handled_without_a_task_or_a_record(r, fire):
    before = {Q.cron_last: Hash({ENTRY.id: str(TICK - 10_000)}), Q.cron_paused: Hash({ENTRY.id: PAUSE})}
    seed(r, before)
    assert fire() == "paused"
    assert_db(r, before | {Q.cron_last: Hash({ENTRY.id: str(TICK)})})


def test_another_entry_paused_does_not_stop_this_one(r, fire):
    seed(r, {Q.cron_paused: Hash({"other-entry": PAUSE})})
    assert fire() == "enqueued"
    assert r.exists(Q.task(TASK))


@pytest.fixture
def store(r, redis_url):
    broker = Broker(redis_url, clock=fake_clock())
    yield SchedulerStore(broker)
    broker.close()


@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused"])
def test_run_now_enqueues_outside_the_schedule_and_leaves_the_ticks_alone(r, store, paused):
    before = {Q.cron_last: Hash({ENTRY.id: str(NOW_MS + 60_000)})}  # even a later tick handled already
    if paused:
        before[Q.cron_paused] = Hash({ENTRY.id: PAUSE})
    seed(r, before)
    task_id, status = store.run_now(ENTRY, "cli:ada")
    assert (task_id, status) == (f"cron:{ENTRY.id}:{NOW_MS}:manual", "enqueued")
    manual = {"tick": NOW_MS, "task_id": task_id, "at": NOW_MS, "outcome": "enqueued", "manual": True}
    assert r.hget(Q.task(task_id), "state") == b"pending"
    assert r.lrange(Q.pending, 0, -1) == [task_id.encode()]
    assert r.zrange(HISTORY, 0, -1, withscores=True) == [(json.dumps(manual, separators=(",", ":")).encode(), NOW_MS)]
    for key, value in before.items():
        assert r.hgetall(key) == {k.encode(): v.encode() for k, v in value.items()}, "the ticks' state moved"


def test_pause_and_resume_set_and_clear_the_flag(r, store):
    store.pause(ENTRY, "cli:ada")
    assert_db(r, {Q.cron_paused: Hash({ENTRY.id: json.dumps({"at": NOW_MS, "by": "cli:ada"}, separators=(",", ":"))})})
    store.resume(ENTRY)
    assert_db(r, {})


def test_pausing_twice_or_resuming_a_running_entry_is_refused_and_changes_nothing(r, store):
    with pytest.raises(FailedPreconditionError, match="is not paused"):
        store.resume(ENTRY)
    assert_db(r, {})
    seed(r, {Q.cron_paused: Hash({ENTRY.id: PAUSE})})
    with pytest.raises(FailedPreconditionError, match="is paused already"):
        store.pause(ENTRY, "cli:bob")
    assert_db(r, {Q.cron_paused: Hash({ENTRY.id: PAUSE})})
