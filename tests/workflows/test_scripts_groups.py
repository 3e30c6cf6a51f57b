"""State tables of the group aggregation scripts: enqueue_group, aggregation_check, aggregation_done and
aggregation_reclaim. Each case seeds every key, runs one script, and compares every key after; a refused call
changes nothing."""

from __future__ import annotations

from taskq.queues.engine import FailedPreconditionError, GroupSettings, TaskIdConflictError, TaskNotFoundError
from taskq.queues.engine.aggregation import aggregation_done, aggregation_reclaim, check_group, enqueue_group
from taskq.queues.engine.message import TaskMessage
from taskq.queues.engine.transitions import Placement
from tests.engine.dbstate import Hash, Set, Stream, ZSet, without
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import NOW_MS, Q, counts, event, msg, task

PAYLOAD = b'{"to":"ada"}'


def placement(task_id: str) -> Placement:
    return Placement(TaskMessage(task_id, "email", PAYLOAD, "default", created_ms=NOW_MS))


def grouped(task_id: str, since: int = NOW_MS) -> Hash:
    return task("aggregating", since=since, group="g1")


# -- enqueue_group --------------------------------------------------------------------------------------------------

EXISTING = {
    Q.task("a"): grouped("a"),
    Q.group("g1"): ZSet({"a": NOW_MS}),
    Q.groups: Set({"g1"}),
    Q.type_counts: counts(aggregating__email=1),
    Q.events: Stream([event("a", "", "aggregating")]),
}


@cases(
    Case(
        "new tasks join the group, the queue is new",
        {},
        lambda t: enqueue_group(t, "default", "g1", [placement("a"), placement("b")]),
        returns=True,
        after={
            Q.task("a"): grouped("a"),
            Q.task("b"): grouped("b"),
            Q.group("g1"): ZSet({"a": NOW_MS, "b": NOW_MS}),
            Q.groups: Set({"g1"}),
            Q.type_counts: counts(aggregating__email=2),
            Q.events: Stream([event("a", "", "aggregating"), event("b", "", "aggregating")]),
        },
    ),
    Case(
        "a second task joins an existing group",
        EXISTING,
        lambda t: enqueue_group(t, "default", "g1", [placement("b")]),
        returns=False,
        after=EXISTING
        | {
            Q.task("b"): grouped("b"),
            Q.group("g1"): ZSet({"a": NOW_MS, "b": NOW_MS}),
            Q.type_counts: counts(aggregating__email=2),
            Q.events: Stream([event("a", "", "aggregating"), event("b", "", "aggregating")]),
        },
    ),
    Case(
        "an existing id is refused",
        EXISTING,
        lambda t: enqueue_group(t, "default", "g2", [placement("b"), placement("a")]),
        raises=TaskIdConflictError,
        detail="2",
    ),
)
def test_enqueue_group(r, redis_url, case):
    run_case(r, redis_url, case)


# -- aggregation_check --------------------------------------------------------------------------------------------

GROUP = {
    Q.task("a"): grouped("a", NOW_MS - 10_000),
    Q.task("b"): grouped("b", NOW_MS - 5_000),
    Q.task("c"): grouped("c", NOW_MS - 1_000),
    Q.group("g1"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000, "c": NOW_MS - 1_000}),
    Q.groups: Set({"g1"}),
    Q.type_counts: counts(aggregating__email=3),
}
DEADLINE = NOW_MS + 120_000
TASKS = {k: v for k, v in GROUP.items() if k.startswith(Q.task_prefix)} | {Q.type_counts: GROUP[Q.type_counts]}


def check(grace: float = 60, max_delay: float = 0, max_size: int = 0):
    return lambda t: check_group(t, "default", "g1", GroupSettings(grace, max_delay, max_size), "S")


ALL_CUT = TASKS | {
    Q.aggregation_set("S"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000, "c": NOW_MS - 1_000}),
    Q.aggregation_sets: ZSet({"S:g1": DEADLINE}),
}


@cases(
    Case("not due: within grace, no max delay, no max size", GROUP, check(), returns=0),
    Case("not due: under max size and max delay", GROUP, check(max_delay=11, max_size=4), returns=0),
    Case(
        "due by max size: the oldest max-size tasks are cut",
        GROUP,
        check(max_size=2),
        returns=2,
        after=GROUP
        | {
            Q.group("g1"): ZSet({"c": NOW_MS - 1_000}),
            Q.aggregation_set("S"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000}),
            Q.aggregation_sets: ZSet({"S:g1": DEADLINE}),
        },
    ),
    Case(
        "due by max delay: the oldest waited long enough; the group is emptied and forgotten",
        GROUP,
        check(max_delay=10),
        returns=3,
        after=ALL_CUT,
    ),
    Case("due by grace: nothing joined for the grace period", GROUP, check(grace=1), returns=3, after=ALL_CUT),
    Case(
        "an empty group is forgotten", {Q.groups: Set({"g1", "g2"})}, check(), returns=0, after={Q.groups: Set({"g2"})}
    ),
    Case(
        "a set with this id exists: refused",
        GROUP | {Q.aggregation_set("S"): ZSet({"x": 1})},
        check(grace=1),
        raises=FailedPreconditionError,
    ),
)
def test_aggregation_check(r, redis_url, case):
    run_case(r, redis_url, case)


# -- aggregation_done ---------------------------------------------------------------------------------------------

CUT = without(GROUP, Q.task("c"), Q.group("g1"), Q.groups) | {
    Q.type_counts: counts(aggregating__email=2),
    Q.aggregation_set("S"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000}),
    Q.aggregation_sets: ZSet({"S:g1": DEADLINE}),
}
COMBINED = TaskMessage("combo", "digest", b"[1,2]", "default", created_ms=NOW_MS)


def done(combined: TaskMessage = COMBINED):
    return lambda t: aggregation_done(t, "default", "S", "g1", combined, actor="agg")


@cases(
    Case(
        "the combined task is enqueued and the set and its tasks deleted, in one step",
        CUT,
        done(),
        after={
            Q.task("combo"): Hash(
                {"type": "digest", "msg": msg(), "payload": "[1,2]", "state": "pending", "since": str(NOW_MS)}
            ),
            Q.pending: ["combo"],
            Q.type_counts: counts(aggregating__email=0, pending__digest=1),
            Q.events: Stream(
                [
                    event("a", "aggregating", "aggregated", worker="agg", error="aggregated into combo"),
                    event("b", "aggregating", "aggregated", worker="agg", error="aggregated into combo"),
                    event("combo", "", "pending", type="digest", worker="agg"),
                ]
            ),
        },
    ),
    Case(
        "a set that was reclaimed is refused: nothing is aggregated twice",
        without(CUT, Q.aggregation_sets),
        done(),
        raises=TaskNotFoundError,
    ),
    Case(
        "a combined id that exists is refused",
        CUT | {Q.task("combo"): task("pending")},
        done(),
        raises=TaskIdConflictError,
    ),
)
def test_aggregation_done(r, redis_url, case):
    run_case(r, redis_url, case)


# -- aggregation_reclaim ------------------------------------------------------------------------------------------

EXPIRED = without(GROUP, Q.group("g1"), Q.groups) | {
    Q.group("g2"): ZSet({"c": NOW_MS - 1_000}),
    Q.groups: Set({"g2"}),
    Q.aggregation_set("S"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000}),
    Q.aggregation_sets: ZSet({"S:g1": NOW_MS - 1}),
}


def reclaim(group: str = "g1"):
    return lambda t: aggregation_reclaim(t, "default", "S", group)


@cases(
    Case(
        "an expired set's tasks go back into their group with their scores",
        EXPIRED,
        reclaim(),
        returns=2,
        after=without(EXPIRED, Q.aggregation_set("S"), Q.aggregation_sets)
        | {
            Q.group("g1"): ZSet({"a": NOW_MS - 10_000, "b": NOW_MS - 5_000}),
            Q.groups: Set({"g1", "g2"}),
        },
    ),
    Case(
        "a set within its deadline is refused",
        EXPIRED | {Q.aggregation_sets: ZSet({"S:g1": NOW_MS + 1})},
        reclaim(),
        raises=FailedPreconditionError,
    ),
    Case("an unknown set is refused", without(EXPIRED, Q.aggregation_sets), reclaim(), raises=TaskNotFoundError),
)
def test_aggregation_reclaim(r, redis_url, case):
    run_case(r, redis_url, case)
