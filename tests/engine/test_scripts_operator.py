"""State tables of the maintenance scripts (forward, delete_expired) and the operator's (pause, unpause,
delete/run/archive one task or all of a state, delete_queue)."""

from __future__ import annotations

import pytest

from taskq.queues.engine import FailedPreconditionError, Limits, QueueNotEmptyError, TaskNotFoundError
from taskq.queues.engine.clock import utc_day

from .dbstate import Hash, Set, Stream, Volatile, ZSet, assert_db, hash_with, seed, without
from .script_runs import Case, cases, run_case
from .task_state import DAY, NOW, NOW_MS, Q, acted, counts, event, failed_at, kept, task, task_record

OP = "operator"
UNIQUE = Q.unique("email", "d41d8cd98f00b204e9800998ecf8427e")
OTHER = {"tq:{other}:pending": ["x"], "tq:{other}:t:x": task("pending")}  # another queue: never touched
SCORES = {
    "active": NOW_MS + 5_000,
    "scheduled": NOW_MS + 60_000,
    "retry": NOW_MS + 60_000,
    "archived": NOW_MS - 60_000,
    "completed": NOW_MS + 60_000,
}


def one_in(state: str) -> dict:
    """Task a in ``state``, holding its unique lock, next to another queue."""
    extra = {"lease": "tok-1"} if state == "active" else {}
    return OTHER | {
        Q.task("a"): task(state, since=NOW_MS - 1000, unique=UNIQUE, **extra),
        Q.state_key(state): ["a"] if state == "pending" else ZSet({"a": SCORES[state]}),
        UNIQUE: Volatile("a"),
        Q.type_counts: counts(**{f"{state}__email": 1}),
    }


def moved_a(state: str, to: str, structure, *, lock: bool = True, error: str = "") -> dict:
    """What one_in(state) becomes when a moves to ``to`` (held in ``structure``)."""
    before = one_in(state)
    after = without(before, Q.state_key(state), UNIQUE) | {
        Q.task("a"): hash_with(before[Q.task("a")], state=to, since=NOW_MS),
        Q.state_key(to): structure,
        Q.type_counts: counts(**{f"{state}__email": 0, f"{to}__email": 1}),
        Q.events: Stream([event("a", state, to, worker=OP, error=error)]),
    }
    return after | ({UNIQUE: Volatile("a")} if lock else {})


def deleted_a(state: str) -> dict:
    return OTHER | {
        Q.type_counts: counts(**{f"{state}__email": 0}),
        Q.events: Stream([event("a", state, "deleted", worker=OP, error=f"deleted by {OP}")]),
    }


# -- forward and delete_expired -----------------------------------------------------------------------------------

WAITING = {Q.task("p"): task("pending", since=NOW_MS - 500), Q.pending: ["p"]}


def due(state: str) -> dict:
    """Three tasks in ``state``: one overdue, one due exactly now, one due a millisecond from now."""
    return WAITING | {
        Q.task("s1"): task(state, since=NOW_MS - 9000, error="boom"),
        Q.task("s2"): task(state, since=NOW_MS - 9000, error="boom"),
        Q.task("s3"): task(state, since=NOW_MS - 9000, error="boom"),
        Q.state_key(state): ZSet({"s1": NOW_MS - 1000, "s2": NOW_MS, "s3": NOW_MS + 1}),
        Q.type_counts: counts(pending__email=1, **{f"{state}__email": 3}),
    }


def forwarded(state: str, *ids: str) -> dict:
    before = due(state)
    after = dict(before)
    for task_id in ids:
        after[Q.task(task_id)] = hash_with(before[Q.task(task_id)], state="pending", since=NOW_MS)
    after[Q.pending] = [*reversed(ids), "p"]
    after[Q.state_key(state)] = ZSet({k: v for k, v in before[Q.state_key(state)].items() if k not in ids})
    after[Q.type_counts] = counts(pending__email=1 + len(ids), **{f"{state}__email": 3 - len(ids)})
    after[Q.events] = Stream([event(i, state, "pending", worker="forwarder") for i in ids])
    return after


def forward(state: str, **options):
    return lambda t: t.forward("default", state, **options)


@cases(
    *(
        Case(f"{state}: what is due", due(state), forward(state), returns=2, after=forwarded(state, "s1", "s2"))
        for state in ("scheduled", "retry")
    ),
    Case(
        "up to the limit, oldest first",
        due("retry"),
        forward("retry", limit=1),
        returns=1,
        after=forwarded("retry", "s1"),
    ),
    Case(
        "nothing due",
        WAITING | {Q.task("s3"): task("scheduled"), Q.scheduled: ZSet({"s3": NOW_MS + 1})},
        forward("scheduled"),
        returns=0,
    ),
)
def test_forward(r, redis_url, case):
    run_case(r, redis_url, case)


EXPIRING = {
    Q.task("c1"): task("completed", completed_at=NOW_MS - 9000, unique=UNIQUE),
    Q.task("c2"): task("completed", completed_at=NOW_MS - 9000),
    Q.task("c3"): task("completed", completed_at=NOW_MS - 9000),
    UNIQUE: Volatile("c1"),  # a completed task has released its lock; a newer task took it
    Q.completed: ZSet({"c1": NOW_MS - 1, "c2": NOW_MS, "c3": NOW_MS + 1}),
    Q.type_counts: counts(completed__email=3),
}
RETENTION_ENDED = "retention ended"
#: c1 run by an operator, then failed once (into retry) and completed: its hash carries that failure.
KEPT_EXPIRING = EXPIRING | {
    Q.task("c1"): kept(
        task(
            "completed", completed_at=NOW_MS - 9000, unique=UNIQUE, error="SMTP 451", failed_at=NOW_MS - 12_000,
            retried=1, ran_ms=700,
        ),
        acted("run", at=NOW_MS - 20_000),
    )
}  # fmt: skip


@cases(
    Case(
        "past retention: deleted",
        EXPIRING,
        lambda t: t.delete_expired("default"),
        returns=2,
        after={
            Q.task("c3"): EXPIRING[Q.task("c3")],
            Q.completed: ZSet({"c3": NOW_MS + 1}),
            Q.type_counts: counts(completed__email=1),
            Q.events: Stream(
                [
                    event("c1", "completed", "deleted", worker="janitor", error=RETENTION_ENDED),
                    event("c2", "completed", "deleted", worker="janitor", error=RETENTION_ENDED),
                ]
            ),
        },
    ),
    Case(
        "up to the limit",
        EXPIRING,
        lambda t: t.delete_expired("default", limit=1),
        returns=1,
        after=without(EXPIRING, Q.task("c1"), UNIQUE)
        | {
            Q.completed: ZSet({"c2": NOW_MS, "c3": NOW_MS + 1}),
            Q.type_counts: counts(completed__email=2),
            Q.events: Stream([event("c1", "completed", "deleted", worker="janitor", error=RETENTION_ENDED)]),
        },
    ),
    Case(
        "nothing expired",
        without(EXPIRING, Q.task("c1"), Q.task("c2")) | {Q.completed: ZSet({"c3": NOW_MS + 1})},
        lambda t: t.delete_expired("default"),
        returns=0,
    ),
    Case(
        "a task an operator acted on leaves its record: trail, a failure since the action, how it ended",
        KEPT_EXPIRING,
        lambda t: t.delete_expired("default", limit=1),
        returns=1,
        after=without(KEPT_EXPIRING, Q.task("c1"), UNIQUE)
        | {
            Q.completed: ZSet({"c2": NOW_MS, "c3": NOW_MS + 1}),
            Q.type_counts: counts(completed__email=2),
            Q.events: Stream([event("c1", "completed", "deleted", worker="janitor", error=RETENTION_ENDED)]),
        }
        | task_record(
            "c1",
            "expired",
            [acted("run", at=NOW_MS - 20_000), failed_at(NOW_MS - 12_000, "SMTP 451")],
            by="janitor",
            retried=1,
            completed_at=NOW_MS - 9000,
            ran_ms=700,
        ),
    ),
)
def test_delete_expired(r, redis_url, case):
    run_case(r, redis_url, case)


# -- pause and unpause --------------------------------------------------------------------------------------------

PAUSED = {Q.paused: str(NOW_MS - 1000)}


@cases(
    Case(
        "pause",
        one_in("pending"),
        lambda t: t.pause("default", OP),
        after=one_in("pending")
        | {Q.paused: str(NOW_MS), Q.events: Stream([event("", "running", "paused", type="", worker=OP)])},
    ),
    Case(
        "pause a paused queue",
        one_in("pending") | PAUSED,
        lambda t: t.pause("default", OP),
        raises=FailedPreconditionError,
        detail="already paused",
    ),
    Case(
        "unpause",
        one_in("pending") | PAUSED,
        lambda t: t.pause("default", OP, paused=False),
        after=one_in("pending") | {Q.events: Stream([event("", "paused", "running", type="", worker=OP)])},
    ),
    Case(
        "unpause a running queue",
        one_in("pending"),
        lambda t: t.pause("default", OP, paused=False),
        raises=FailedPreconditionError,
        detail="not paused",
    ),
)
def test_pause(r, redis_url, case):
    run_case(r, redis_url, case)


# -- one task -----------------------------------------------------------------------------------------------------


def action(name: str, task_id: str = "a"):
    return lambda t: getattr(t, name)("default", task_id, OP)


@cases(
    *(
        Case(f"delete {state}: lock released", one_in(state), action("delete_task"), after=deleted_a(state))
        for state in ("pending", "scheduled", "retry", "archived", "completed")
    ),
    Case(
        "delete from the middle of the line",
        one_in("pending")
        | {
            Q.task("b"): task("pending"),
            Q.task("c"): task("pending"),
            Q.pending: ["b", "a", "c"],
            Q.type_counts: counts(pending__email=3),
        },
        action("delete_task"),
        after=deleted_a("pending")
        | {
            Q.task("b"): task("pending"),
            Q.task("c"): task("pending"),
            Q.pending: ["b", "c"],
            Q.type_counts: counts(pending__email=2),
        },
    ),
    Case("delete active: refused", one_in("active"), action("delete_task"), raises=FailedPreconditionError),
    Case("delete unknown", one_in("pending"), action("delete_task", "nope"), raises=TaskNotFoundError, detail="nope"),
)
def test_delete_task(r, redis_url, case):
    run_case(r, redis_url, case)


def ran_a(state: str, *trail: dict, before: dict | None = None) -> dict:
    """one_in(state) (or ``before``) after the operator ran a: pending, marked to leave a record with ``trail``."""
    after = moved_a(state, "pending", ["a"])
    if before is not None:
        after[Q.task("a")] = hash_with(before[Q.task("a")], state="pending", since=NOW_MS)
    after[Q.task("a")] = kept(after[Q.task("a")], *trail)
    return after


FAILED_BEFORE = NOW_MS - 30_000  # when a's last attempt failed, 1.2 s after it started
#: a archived by a failed attempt: the hash carries the failure (error, failed_at, ran_ms).
FAILED_A = one_in("archived") | {
    Q.task("a"): hash_with(one_in("archived")[Q.task("a")], error="SMTP 550", failed_at=FAILED_BEFORE, ran_ms=1200)
}
FAILURE = failed_at(FAILED_BEFORE, "SMTP 550", "archived", ran_ms=1200)
#: a, already run once by an operator after that failure, failed again since (into retry).
RAN_BEFORE = one_in("retry") | {
    Q.task("a"): kept(
        hash_with(one_in("retry")[Q.task("a")], error="SMTP 451", failed_at=NOW_MS - 1000, ran_ms=300),
        FAILURE,
        acted("run", at=FAILED_BEFORE + 5000),
    )
}
#: a with a full trail (TRAIL_KEPT, 20 entries): the oldest goes when one more comes.
FULL_TRAIL = [acted("run", at=NOW_MS - 100_000 + n) for n in range(20)]
FULL_A = one_in("scheduled") | {Q.task("a"): kept(one_in("scheduled")[Q.task("a")], *FULL_TRAIL)}


@cases(
    *(
        Case(f"run {state} now", one_in(state), action("run_task"), after=ran_a(state, acted("run")))
        for state in ("scheduled", "retry", "archived")
    ),
    *(
        Case(f"run {state}: refused", one_in(state), action("run_task"), raises=FailedPreconditionError)
        for state in ("pending", "active", "completed")
    ),
    Case("run unknown", one_in("scheduled"), action("run_task", "nope"), raises=TaskNotFoundError, detail="nope"),
    Case(
        "run a failed task: the failure it carries joins its trail before the run",
        FAILED_A,
        action("run_task"),
        after=ran_a("archived", FAILURE, acted("run"), before=FAILED_A),
    ),
    Case(
        "run it again: the new failure joins, the one already kept is not repeated",
        RAN_BEFORE,
        action("run_task"),
        after=ran_a(
            "retry",
            FAILURE,
            acted("run", at=FAILED_BEFORE + 5000),
            failed_at(NOW_MS - 1000, "SMTP 451", "retry", ran_ms=300),
            acted("run"),
            before=RAN_BEFORE,
        ),
    ),
    Case(
        "a full trail drops its oldest entry",
        FULL_A,
        action("run_task"),
        after=ran_a("scheduled", *FULL_TRAIL[1:], acted("run"), before=FULL_A),
    ),
    Case(
        "records off (TASKS_TASK_RECORD_SECONDS=0): nothing marked",
        FAILED_A,
        action("run_task"),
        after=moved_a("archived", "pending", ["a"])
        | {Q.task("a"): hash_with(FAILED_A[Q.task("a")], state="pending", since=NOW_MS)},
        limits=Limits(task_record_seconds=0),
    ),
)
def test_run_task(r, redis_url, case):
    run_case(r, redis_url, case)


def edit(task_id: str = "a", task_type: str = ""):
    options = b'{"v":1,"created":1,"max_retry":2}'
    return lambda t: t.edit_task("default", task_id, b'{"to":"bob"}', options, OP, task_type)


def retyped_a() -> dict:
    """A retry task edited into type "mail": it leaves retry as an email and arrives in pending as a mail."""
    after = edited_a("retry")
    after[Q.task("a")] = hash_with(after[Q.task("a")], type="mail")
    after[Q.type_counts] = counts(retry__email=0, pending__mail=1)
    after[Q.events] = Stream([event("a", "retry", "pending", "mail", worker=OP)])
    return after


def edited_a(state: str) -> dict:
    """one_in(state) after the edit: pending with the new payload and options, its retry count back to 0."""
    after = moved_a(state, "pending", ["a"])
    after[Q.task("a")] = kept(
        hash_with(after[Q.task("a")], payload='{"to":"bob"}', msg='{"v":1,"created":1,"max_retry":2}', retried="0"),
        acted("edit"),
    )
    return after


def edited_failed_a() -> dict:
    """FAILED_A after the edit: the failure it carried kept on its trail, before the edit."""
    after = edited_a("archived")
    edited = hash_with(FAILED_A[Q.task("a")], state="pending", since=NOW_MS, payload='{"to":"bob"}', retried="0")
    after[Q.task("a")] = kept(hash_with(edited, msg='{"v":1,"created":1,"max_retry":2}'), FAILURE, acted("edit"))
    return after


@cases(
    *(
        Case(f"edit {state} and run it", one_in(state), edit(), after=edited_a(state))
        for state in ("retry", "archived")
    ),
    *(
        Case(f"edit {state}: refused", one_in(state), edit(), raises=FailedPreconditionError)
        for state in ("pending", "active", "scheduled", "completed")
    ),
    Case("edit unknown", one_in("retry"), edit("nope"), raises=TaskNotFoundError, detail="nope"),
    Case("edit with a new type: the counts follow it", one_in("retry"), edit(task_type="mail"), after=retyped_a()),
    Case("edit with the same type", one_in("retry"), edit(task_type="email"), after=edited_a("retry")),
    Case("edit a failed task: its failure joins the trail", FAILED_A, edit(), after=edited_failed_a()),
)
def test_edit_task(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    # An archived task is dead: the operator's archive releases the unique lock, as the worker's does.
    *(
        Case(
            f"archive {state}",
            one_in(state),
            action("archive_task"),
            after=moved_a(state, "archived", ZSet({"a": NOW_MS}), lock=False, error=f"archived by {OP}"),
        )
        for state in ("pending", "scheduled", "retry")
    ),
    Case(
        "archive trims the archive",
        one_in("pending")
        | {
            Q.task("x"): task("archived", since=NOW_MS - 5000),
            Q.archived: ZSet({"x": NOW_MS - 5000}),
            Q.type_counts: counts(pending__email=1, archived__email=1),
        },
        action("archive_task"),
        limits=Limits(archive_max_size=1),
        after=moved_a("pending", "archived", ZSet({"a": NOW_MS}), lock=False)
        | {
            Q.type_counts: counts(pending__email=0, archived__email=1),
            Q.events: Stream(
                [
                    event("a", "pending", "archived", worker=OP, error=f"archived by {OP}"),
                    event("x", "archived", "deleted", worker=OP, error="trimmed from the archive"),
                ]
            ),
        },
    ),
    *(
        Case(f"archive {state}: refused", one_in(state), action("archive_task"), raises=FailedPreconditionError)
        for state in ("active", "archived", "completed")
    ),
    Case("archive unknown", one_in("pending"), action("archive_task", "nope"), raises=TaskNotFoundError, detail="nope"),
)
def test_archive_task(r, redis_url, case):
    run_case(r, redis_url, case)


# -- all of a state, chunk by chunk -------------------------------------------------------------------------------

IDS = ("t1", "t2", "t3", "t4", "t5")  # oldest first


def five_in(state: str) -> dict:
    tasks = {Q.task(i): task(state, since=NOW_MS - 9000 + n) for n, i in enumerate(IDS)}
    structure = list(reversed(IDS)) if state == "pending" else ZSet({i: NOW_MS - 9000 + n for n, i in enumerate(IDS)})
    return OTHER | tasks | {Q.state_key(state): structure, Q.type_counts: counts(**{f"{state}__email": 5})}


def after_bulk(state: str, to: str, done: tuple[str, ...], error: str = "") -> dict:
    """five_in(state) after the tasks ``done`` went to ``to`` ("" for deleted)."""
    before = five_in(state)
    rest = [i for i in IDS if i not in done]
    after = without(before, Q.state_key(state), *(Q.task(i) for i in done))
    if rest:
        after[Q.state_key(state)] = (
            list(reversed(rest)) if state == "pending" else ZSet({i: before[Q.state_key(state)][i] for i in rest})
        )
    if to:
        after.update({Q.task(i): hash_with(before[Q.task(i)], state=to, since=NOW_MS) for i in done})
        after[Q.state_key(to)] = list(reversed(done)) if to == "pending" else ZSet({i: NOW_MS for i in done})
    after[Q.type_counts] = counts(**{f"{state}__email": len(rest)}, **({f"{to}__email": len(done)} if to else {}))
    after[Q.events] = Stream([event(i, state, to or "deleted", worker=OP, error=error) for i in done])
    return after


def bulk(name: str, state: str, chunk: int = 2):
    return lambda t: getattr(t, name)("default", state, OP, chunk=chunk)


#: Each bulk script, where it sends the tasks ("" deleted), the error its events carry, and the states it takes.
FIRST_CHUNKS = [
    ("delete_all", "", f"deleted by {OP}", ("pending", "scheduled", "retry", "archived", "completed")),
    ("run_all", "pending", "", ("scheduled", "retry", "archived")),
    ("archive_all", "archived", f"archived by {OP}", ("pending", "scheduled", "retry")),
]


@cases(
    *(
        Case(
            f"{name.replace('_', ' ')} {state}: first chunk",
            five_in(state),
            bulk(name, state),
            returns=2,
            after=after_bulk(state, to, ("t1", "t2"), error=error),
        )
        for name, to, error, states in FIRST_CHUNKS
        for state in states
    ),
    Case(
        "archive all trims the archive",
        five_in("retry"),
        bulk("archive_all", "retry", chunk=5),
        returns=5,
        limits=Limits(archive_max_size=3),
        after=without(after_bulk("retry", "archived", IDS), Q.task("t1"), Q.task("t2"))
        | {
            Q.archived: ZSet({"t3": NOW_MS, "t4": NOW_MS, "t5": NOW_MS}),
            Q.type_counts: counts(retry__email=0, archived__email=3),
            Q.events: Stream(
                [
                    *after_bulk("retry", "archived", IDS, error=f"archived by {OP}")[Q.events],
                    event("t1", "archived", "deleted", worker=OP, error="trimmed from the archive"),
                    event("t2", "archived", "deleted", worker=OP, error="trimmed from the archive"),
                ]
            ),
        },
    ),
    Case("delete all of an empty state", OTHER, bulk("delete_all", "retry"), returns=0),
)
def test_bulk_chunk(r, redis_url, case):
    run_case(r, redis_url, case)


@pytest.mark.parametrize(
    ("name", "state", "to", "error"),
    [
        ("delete_all", "pending", "", "deleted by operator"),
        ("delete_all", "completed", "", "deleted by operator"),
        ("run_all", "archived", "pending", ""),
        ("archive_all", "scheduled", "archived", "archived by operator"),
    ],
)
def test_bulk_takes_several_calls(r, broker, name, state, to, error):
    """With a chunk smaller than the state, the caller calls until 0; the end state is the same as in one go."""
    seed(r, five_in(state))
    replies = []
    while not replies or replies[-1]:
        replies.append(broker.run(bulk(name, state)(broker.transitions)))
    assert replies == [2, 2, 1, 0]
    assert_db(r, after_bulk(state, to, IDS, error=error))


# -- delete_queue -------------------------------------------------------------------------------------------------

IN_FULL = ("pending", "scheduled", "retry", "archived", "completed")
FULL = OTHER | {  # one task in each state but active (IN_FULL), and every auxiliary key of the queue
    Q.task("p"): task("pending", unique=UNIQUE),
    Q.task("s"): task("scheduled"),
    Q.task("r"): task("retry"),
    Q.task("x"): task("archived"),
    Q.task("c"): task("completed"),
    Q.pending: ["p"],
    Q.scheduled: ZSet({"s": NOW_MS}),
    Q.retry: ZSet({"r": NOW_MS}),
    Q.archived: ZSet({"x": NOW_MS}),
    Q.completed: ZSet({"c": NOW_MS}),
    UNIQUE: Volatile("p"),
    Q.unique("email", "other"): Volatile("elsewhere"),  # a lock no task of this queue holds
    Q.paused: str(NOW_MS),
    Q.processed: "7",
    Q.failed: "3",
    Q.processed_on(DAY): Volatile("7"),
    Q.failed_on(utc_day(NOW - 89 * 86400)): Volatile("3"),  # every daily counter still kept goes with the totals
    Q.type_counts: counts(**{f"{state}__email": 1 for state in IN_FULL}, processed__email=7, failed__email=3),
    Q.events: Stream([event("p", "", "pending")]),
    "tq:queues": Set({"default", "other"}),
}
AUXILIARY = {k: FULL[k] for k in (Q.paused, Q.processed, Q.failed, Q.type_counts, Q.events)}
# Tasks no state list holds: aggregating in a group or in an aggregation set being combined, and waiting for a
# dependency (its workflow's record and the dependency's set of waiters with it); periodic entries' keys stay.
HIDDEN = OTHER | {
    Q.task("g1"): task("aggregating", group="batch"),
    Q.task("g2"): task("aggregating", group="batch"),
    Q.group("batch"): ZSet({"g1": NOW_MS}),
    Q.groups: Set({"batch"}),
    Q.aggregation_set("s7"): ZSet({"g2": NOW_MS}),
    Q.aggregation_sets: ZSet({"s7:batch": NOW_MS + 60_000}),
    Q.task("w"): task("waiting", after='["gone"]', deps_left="1", wf="f1", role="member"),
    Q.waiting: ZSet({"w": NOW_MS}),
    Q.dependents("gone"): Set({"w"}),
    Q.workflow("f1"): Hash({"state": "running", "members": '["w"]'}),
    Q.workflows: ZSet({"f1": NOW_MS}),
    Q.cron_last: Hash({"nightly": str(NOW_MS)}),
}
LEFT_BEHIND = {k: FULL[k] for k in (Q.unique("email", "other"), "tq:queues")}


def delete_queue(force: bool):
    return lambda t: t.delete_queue("default", force)


def not_empty(name: str, before: dict, detail: str | None = None, force: bool = False) -> Case:
    """delete_queue refused: tasks are left (or active); nothing changes."""
    return Case(name, before, delete_queue(force), raises=QueueNotEmptyError, detail=detail)


@cases(
    not_empty("tasks left: refused", FULL, "5 tasks left; force to delete them"),
    not_empty("completed tasks count", OTHER | one_in("completed")),
    not_empty(
        "active: refused even forced",
        FULL | one_in("active") | {Q.task("p"): task("pending")},
        "1 tasks are active",
        force=True,
    ),
    Case("forced: every task and key of the queue", FULL, delete_queue(True), after=OTHER | LEFT_BEHIND),
    Case("empty queue", OTHER | AUXILIARY | LEFT_BEHIND, delete_queue(False), after=OTHER | LEFT_BEHIND),
    not_empty("aggregating and waiting tasks count", HIDDEN, "3 tasks left; force to delete them"),
    Case(
        "forced: groups, aggregation sets, waiting tasks, dependency sets and workflows go",
        HIDDEN,
        delete_queue(True),
        after=OTHER | {Q.cron_last: HIDDEN[Q.cron_last]},
    ),
    Case(
        "finished workflow records alone are no tasks",
        OTHER | {k: HIDDEN[k] for k in (Q.workflow("f1"), Q.workflows)},
        delete_queue(False),
        after=OTHER,
    ),
)
def test_delete_queue(r, redis_url, case):
    run_case(r, redis_url, case)
