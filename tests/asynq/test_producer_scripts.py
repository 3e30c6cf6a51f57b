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


@dataclass
class Case:
    name: str
    script: str
    keys: list[str]
    args: list[Any]
    reply: int
    seeded: dict[str, Any] = field(default_factory=dict)
    written: dict[str, Any] | None = None  # the keys added or changed; None: nothing changes
    ttl: int | None = None  # the unique lock's TTL, seconds, when it is written


PENDING = Hash({"msg": "MSG", "state": "pending", "pending_since": NOW_NS})
SCHEDULED = Hash({"msg": "MSG", "state": "scheduled"})
AGGREGATING = Hash({"msg": "MSG", "state": "aggregating", "group": "daily"})

PENDING_ARGS = (["MSG", "t1", NOW_NS], [Q.task("t1"), Q.pending])
PENDING_UNIQUE = ([LOCK, Q.task("t1"), Q.pending], ["t1", 90, "MSG", NOW_NS])
SCHEDULED_ARGS = ([Q.task("t1"), Q.scheduled], ["MSG", 1700000600, "t1"])
SCHEDULED_UNIQUE = ([LOCK, Q.task("t1"), Q.scheduled], ["t1", 690, 1700000600, "MSG"])
GROUP_ARGS = ([Q.task("t1"), Q.group("daily"), Q.groups], ["MSG", "t1", 1700000000, "daily"])
GROUP_UNIQUE = ([*GROUP_ARGS[0], LOCK], [*GROUP_ARGS[1], 90])

CASES = [
    Case(
        "pending",
        "enqueue_pending",
        PENDING_ARGS[1],
        PENDING_ARGS[0],
        1,
        written={Q.task("t1"): PENDING, Q.pending: ["t1", "other"]},
    ),
    Case("pending: id taken", "enqueue_pending", PENDING_ARGS[1], PENDING_ARGS[0], 0, TAKEN),
    Case(
        "pending unique",
        "enqueue_pending_unique",
        *PENDING_UNIQUE,
        1,
        written={
            LOCK: Volatile("t1"),
            Q.task("t1"): Hash({**PENDING, "unique_key": LOCK}),
            Q.pending: ["t1", "other"],
        },
        ttl=90,
    ),
    Case("pending unique: lock held", "enqueue_pending_unique", *PENDING_UNIQUE, -1, HELD),
    Case("pending unique: id taken", "enqueue_pending_unique", *PENDING_UNIQUE, 0, TAKEN),
    Case("pending unique: both, the lock first", "enqueue_pending_unique", *PENDING_UNIQUE, -1, {**TAKEN, **HELD}),
    Case(
        "scheduled",
        "enqueue_scheduled",
        *SCHEDULED_ARGS,
        1,
        written={Q.task("t1"): SCHEDULED, Q.scheduled: ZSet({"t1": 1700000600.0})},
    ),
    Case("scheduled: id taken", "enqueue_scheduled", *SCHEDULED_ARGS, 0, TAKEN),
    Case(
        "scheduled unique",
        "enqueue_scheduled_unique",
        *SCHEDULED_UNIQUE,
        1,
        written={
            LOCK: Volatile("t1"),
            Q.task("t1"): Hash({**SCHEDULED, "unique_key": LOCK}),
            Q.scheduled: ZSet({"t1": 1700000600.0}),
        },
        ttl=690,
    ),
    Case("scheduled unique: lock held", "enqueue_scheduled_unique", *SCHEDULED_UNIQUE, -1, HELD),
    Case("scheduled unique: id taken", "enqueue_scheduled_unique", *SCHEDULED_UNIQUE, 0, TAKEN),
    Case(
        "group",
        "enqueue_group",
        *GROUP_ARGS,
        1,
        {Q.group("daily"): ZSet({"earlier": 1.0}), Q.groups: Set({"daily"})},
        written={Q.task("t1"): AGGREGATING, Q.group("daily"): ZSet({"earlier": 1.0, "t1": 1700000000.0})},
    ),
    Case(
        "group: a new group joins the queue's groups",
        "enqueue_group",
        *GROUP_ARGS,
        1,
        {Q.groups: Set({"weekly"})},
        written={
            Q.task("t1"): AGGREGATING,
            Q.group("daily"): ZSet({"t1": 1700000000.0}),
            Q.groups: Set({"weekly", "daily"}),
        },
    ),
    Case("group: id taken", "enqueue_group", *GROUP_ARGS, 0, TAKEN),
    Case(
        "group unique: the hash names no lock, as asynq's",
        "enqueue_group_unique",
        *GROUP_UNIQUE,
        1,
        written={
            LOCK: Volatile("t1"),
            Q.task("t1"): AGGREGATING,
            Q.group("daily"): ZSet({"t1": 1700000000.0}),
            Q.groups: Set({"daily"}),
        },
        ttl=90,
    ),
    Case("group unique: lock held", "enqueue_group_unique", *GROUP_UNIQUE, -1, HELD),
    Case("group unique: id taken", "enqueue_group_unique", *GROUP_UNIQUE, 0, TAKEN),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_enqueue_script(case: Case, r: redis.Redis, broker: Broker) -> None:
    before = {**OTHER, **case.seeded}
    seed(r, before)
    reply = broker.run(call("test", case.script, case.keys, case.args))
    assert reply == case.reply
    assert_db(r, {**before, **(case.written or {})})
    if case.ttl is not None:
        assert r.ttl(LOCK) == case.ttl


def test_every_enqueue_script_has_a_case() -> None:
    scripts = {path.stem for path in LUA_DIR.glob("enqueue_*.lua")}
    assert scripts == {case.script for case in CASES}
    refused = {case.script for case in CASES if case.written is None}
    assert refused == scripts  # each script's refusal is shown to change nothing
