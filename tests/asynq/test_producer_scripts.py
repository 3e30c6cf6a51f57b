"""The enqueue scripts over asynq's keys, table-driven: seed every key, run one script, compare every key. Each
replies as asynq's own script does (1 written, 0 the id is taken, -1 the unique lock is held), and a refusal
changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.keys import ALL_QUEUES, AsynqQueueKeys
from taskq.queues.engine.asynq.scripts import LUA_DIR, call
from taskq.queues.engine.broker import Broker
from tests.engine.dbstate import Hash, Set, Volatile, ZSet, assert_db, seed

Q = AsynqQueueKeys("mail")
LOCK = Q.unique("email", b"payload")
NOW_NS = "1700000000123456789"
#: What every case starts from: another task of the queue, pending, and the queue listed.
OTHER = {
    ALL_QUEUES: Set({"mail"}),
    Q.task("other"): Hash({"msg": "OTHER", "state": "pending", "pending_since": "1"}),
    Q.pending: ["other"],
}
#: A task of the id the cases enqueue, already there: every script refuses it.
TAKEN = {Q.task("t1"): Hash({"msg": "EARLIER", "state": "scheduled"}), Q.scheduled: ZSet({"t1": 5.0})}
HELD = {LOCK: Volatile("someone-else", 60_000)}


#: Each script's KEYS and ARGV, as asynq's client would send them for task t1.
CALLS: dict[str, tuple[list[str], list[Any]]] = {
    "enqueue_pending": ([Q.task("t1"), Q.pending], ["MSG", "t1", NOW_NS]),
    "enqueue_pending_unique": ([LOCK, Q.task("t1"), Q.pending], ["t1", 90, "MSG", NOW_NS]),
    "enqueue_scheduled": ([Q.task("t1"), Q.scheduled], ["MSG", 1700000600, "t1"]),
    "enqueue_scheduled_unique": ([LOCK, Q.task("t1"), Q.scheduled], ["t1", 690, 1700000600, "MSG"]),
    "enqueue_group": ([Q.task("t1"), Q.group("daily"), Q.groups], ["MSG", "t1", 1700000000, "daily"]),
    "enqueue_group_unique": ([Q.task("t1"), Q.group("daily"), Q.groups, LOCK], ["MSG", "t1", 1700000000, "daily", 90]),
}

#: What each way in writes, besides a unique lock.
PENDING = {Q.task("t1"): Hash({"msg": "MSG", "state": "pending", "pending_since": NOW_NS}), Q.pending: ["t1", "other"]}
SCHEDULED = {Q.task("t1"): Hash({"msg": "MSG", "state": "scheduled"}), Q.scheduled: ZSet({"t1": 1700000600.0})}
GROUPED = {
    Q.task("t1"): Hash({"msg": "MSG", "state": "aggregating", "group": "daily"}),
    Q.group("daily"): ZSet({"t1": 1700000000.0}),
    Q.groups: Set({"daily"}),
}


def locked(written: dict[str, Any], hash_names_lock: bool = True) -> dict[str, Any]:
    """``written`` with the unique lock held by t1 (and named in its hash where asynq names it)."""
    task = Hash({**written[Q.task("t1")], **({"unique_key": LOCK} if hash_names_lock else {})})
    return {**written, Q.task("t1"): task, LOCK: Volatile("t1")}


@dataclass
class Case:
    name: str
    script: str
    reply: int
    seeded: dict[str, Any] = field(default_factory=dict)
    written: dict[str, Any] | None = None  # the keys added or changed; None: nothing changes
    ttl: int | None = None  # the unique lock's TTL, seconds, when it is written


CASES = [
    Case("pending", "enqueue_pending", 1, written=PENDING),
    Case("pending: id taken", "enqueue_pending", 0, TAKEN),
    Case("pending unique", "enqueue_pending_unique", 1, written=locked(PENDING), ttl=90),
    Case("pending unique: lock held", "enqueue_pending_unique", -1, HELD),
    Case("pending unique: id taken", "enqueue_pending_unique", 0, TAKEN),
    Case("pending unique: both, the lock first", "enqueue_pending_unique", -1, {**TAKEN, **HELD}),
    Case("scheduled", "enqueue_scheduled", 1, written=SCHEDULED),
    Case("scheduled: id taken", "enqueue_scheduled", 0, TAKEN),
    Case("scheduled unique: until a TTL past", "enqueue_scheduled_unique", 1, written=locked(SCHEDULED), ttl=690),
    Case("scheduled unique: lock held", "enqueue_scheduled_unique", -1, HELD),
    Case("scheduled unique: id taken", "enqueue_scheduled_unique", 0, TAKEN),
    Case(
        "group: a new group",
        "enqueue_group",
        1,
        {Q.groups: Set({"weekly"})},
        {**GROUPED, Q.groups: Set({"weekly", "daily"})},
    ),
    Case(
        "group: beside earlier members",
        "enqueue_group",
        1,
        {Q.group("daily"): ZSet({"earlier": 1.0}), Q.groups: Set({"daily"})},
        {**GROUPED, Q.group("daily"): ZSet({"earlier": 1.0, "t1": 1700000000.0})},
    ),
    Case("group: id taken", "enqueue_group", 0, TAKEN),
    Case("group unique: the hash names no lock", "enqueue_group_unique", 1, written=locked(GROUPED, False), ttl=90),
    Case("group unique: lock held", "enqueue_group_unique", -1, HELD),
    Case("group unique: id taken", "enqueue_group_unique", 0, TAKEN),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_enqueue_script(case: Case, r: redis.Redis, broker: Broker) -> None:
    before = {**OTHER, **case.seeded}
    seed(r, before)
    reply = broker.run(call("test", case.script, *CALLS[case.script]))
    assert reply == case.reply
    assert_db(r, {**before, **(case.written or {})})
    if case.ttl is not None:
        assert r.ttl(LOCK) == case.ttl


def test_every_enqueue_script_has_a_case() -> None:
    scripts = {path.stem for path in LUA_DIR.glob("enqueue_*.lua")}
    assert scripts == {case.script for case in CASES}
    refused = {case.script for case in CASES if case.written is None}
    assert refused == scripts  # each script's refusal is shown to change nothing
