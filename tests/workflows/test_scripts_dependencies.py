"""State tables of the dependency and workflow transitions: submit (new tasks waiting for others, and the
workflow record), and what done, complete, archive, archive_task and delete_task do to the tasks waiting for the
task they move (release them, or archive them) and to its workflow. Every key is compared after each case."""

from __future__ import annotations

import json

from taskq.queues.engine import FailedPreconditionError, TaskIdConflictError
from taskq.queues.engine.message import TaskMessage
from taskq.queues.engine.transitions import Placement
from taskq.queues.engine.workflows import Submission, submit_call
from tests.engine.dbstate import Hash, Set, Stream, Volatile, ZSet, without
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import (
    DAY,
    NOW_MS,
    Q,
    counts,
    event,
    failed_dependency,
    msg,
    on_error_released,
    task,
    waiting,
)

W = "w1"
LEASE = NOW_MS + 5_000


def placement(task_id: str, task_type: str = "email") -> Placement:
    return Placement(TaskMessage(task_id, task_type, b'{"to":"ada"}', "default", created_ms=NOW_MS))


def submit(*rows: tuple[str, list[str], str, bool], workflow: str = "", keep: float = 3600):
    tasks = [(placement(i), after, role, p) for i, after, role, p in rows]
    return lambda t: submit_call(t, Submission("default", tasks, workflow, keep))


def active(**extra) -> Hash:
    return task("active", since=NOW_MS - 1000, lease="tok-1", **extra)


# -- submit -------------------------------------------------------------------------------------------------------


def submitted(name: str, before: dict, call, after: dict) -> Case:
    """A submit that goes through. It replies "NEW" (True) when the queue had no event stream before it: the
    client then lists the queue."""
    return Case(name, before, call, returns=Q.events not in before, after=after)


A_PENDING = {
    Q.task("A"): task("pending"),
    Q.pending: ["A"],
    Q.type_counts: counts(pending__email=1),
    Q.events: Stream([event("A", "", "pending")]),
}
A_DONE = {
    Q.task("A"): task("completed", result='{"n":1}'),
    Q.completed: ZSet({"A": NOW_MS + 60_000}),
    Q.type_counts: counts(completed__email=1),
    Q.events: Stream([event("A", "active", "completed")]),
}
B_WAITS_FOR_A = {
    Q.task("B"): waiting(["A"], 1),
    Q.waiting: ZSet({"B": NOW_MS}),
    Q.dependents("A"): Set({"B"}),
}


@cases(
    submitted(
        "B after a pending A waits for it",
        A_PENDING,
        submit(("B", ["A"], "", False)),
        after=A_PENDING
        | B_WAITS_FOR_A
        | {
            Q.type_counts: counts(pending__email=1, waiting__email=1),
            Q.events: Stream([event("A", "", "pending"), event("B", "", "waiting")]),
        },
    ),
    submitted(
        "B after an A not submitted yet waits for it (Optimus: B first)",
        {},
        submit(("B", ["A"], "", False)),
        after=B_WAITS_FOR_A
        | {
            Q.type_counts: counts(waiting__email=1),
            Q.events: Stream([event("B", "", "waiting")]),
        },
    ),
    submitted(
        "B after a completed A is pending at once, with A's result",
        A_DONE,
        submit(("B", ["A"], "", True)),
        after=A_DONE
        | {
            Q.task("B"): task(
                "pending", options=msg(results=[{"n": 1}]).replace(", ", ","), after='["A"]', **{"pass": 1}
            ),
            Q.pending: ["B"],
            Q.type_counts: counts(completed__email=1, pending__email=1),
            Q.events: Stream([event("A", "active", "completed"), event("B", "", "pending")]),
        },
    ),
    Case(
        "B after an archived A is refused: it could never run",
        {Q.task("A"): task("archived"), Q.archived: ZSet({"A": NOW_MS}), Q.type_counts: counts(archived__email=1)},
        submit(("B", ["A"], "", False)),
        raises=FailedPreconditionError,
        detail="dependency A failed",
    ),
    Case(
        "an id that exists is refused",
        A_PENDING,
        submit(("B", [], "", False), ("A", ["B"], "", False)),
        raises=TaskIdConflictError,
        detail="2",
    ),
    Case(
        "A after a B that waits for A is a cycle: refused",
        B_WAITS_FOR_A,
        submit(("A", ["B"], "", False)),
        raises=FailedPreconditionError,
        detail="dependency cycle through A",
    ),
    Case(
        "a longer cycle through waiting tasks: refused",
        B_WAITS_FOR_A
        | {Q.task("C"): waiting(["B"], 1), Q.waiting: ZSet({"B": NOW_MS, "C": NOW_MS}), Q.dependents("B"): Set({"C"})},
        submit(("A", ["C"], "", False)),
        raises=FailedPreconditionError,
        detail="dependency cycle through A",
    ),
    Case(
        "a cycle inside one call: refused",
        {},
        submit(("X", ["Y"], "", False), ("Y", ["X"], "", False)),
        raises=FailedPreconditionError,
        detail="dependency cycle through X",
    ),
    Case(
        "a task after itself: refused",
        {},
        submit(("X", ["X"], "", False)),
        raises=FailedPreconditionError,
        detail="dependency cycle through X",
    ),
    submitted(
        "A, waited for by B, may wait for another task itself: no cycle",
        B_WAITS_FOR_A | {Q.type_counts: counts(waiting__email=1), Q.events: Stream([event("B", "", "waiting")])},
        submit(("A", ["Z"], "", False)),
        after=B_WAITS_FOR_A
        | {
            Q.task("A"): waiting(["Z"], 1),
            Q.waiting: ZSet({"A": NOW_MS, "B": NOW_MS}),
            Q.dependents("Z"): Set({"A"}),
            Q.type_counts: counts(waiting__email=2),
            Q.events: Stream([event("B", "", "waiting"), event("A", "", "waiting")]),
        },
    ),
    submitted(
        "a workflow: the first member pending, the next waiting, the on_error callback held, the record written",
        {},
        submit(("a", [], "member", False), ("b", ["a"], "member", True), ("e", [], "on_error", False), workflow="WF"),
        after={
            Q.task("a"): task("pending", wf="WF", role="member"),
            Q.task("b"): waiting(["a"], 1, wf="WF", role="member", **{"pass": 1}),
            Q.task("e"): task("waiting", deps_left=0, wf="WF", role="on_error"),
            Q.pending: ["a"],
            Q.waiting: ZSet({"b": NOW_MS, "e": NOW_MS}),
            Q.dependents("a"): Set({"b"}),
            Q.workflow("WF"): Hash(
                {
                    "state": "running",
                    "created": str(NOW_MS),
                    "keep": "3600000",
                    "left": "2",
                    "on_error": "e",
                    "members": json.dumps(
                        [["a", "email", "member", []], ["b", "email", "member", ["a"]], ["e", "email", "on_error", []]]
                    ),
                }
            ),
            Q.workflows: ZSet({"WF": NOW_MS}),
            Q.type_counts: counts(pending__email=1, waiting__email=2),
            Q.events: Stream([event("a", "", "pending"), event("b", "", "waiting"), event("e", "", "waiting")]),
        },
    ),
    Case(
        "a workflow id that exists is refused",
        {Q.workflow("WF"): Hash({"state": "running"})},
        submit(("a", [], "member", False), workflow="WF"),
        raises=TaskIdConflictError,
        detail="0",
    ),
)
def test_submit(r, redis_url, case):
    run_case(r, redis_url, case)


# -- success releases dependents (done, complete) -----------------------------------------------------------------

A_ACTIVE = {
    Q.task("A"): active(result='"x"'),
    Q.lease: ZSet({"A": LEASE}),
}
COUNTED = {Q.processed: "1", Q.processed_on(DAY): Volatile("1")}


def done():
    return lambda t: t.done("default", [("A", "tok-1")], W)


@cases(
    Case(
        "A's success releases B to pending with A's result, in the same step",
        A_ACTIVE
        | B_WAITS_FOR_A
        | {Q.task("B"): waiting(["A"], 1, **{"pass": 1}), Q.type_counts: counts(active__email=1, waiting__email=1)},
        done(),
        returns=["OK"],
        after=COUNTED
        | {
            Q.task("B"): task("pending", options=msg(results=["x"]).replace(", ", ","), after='["A"]', **{"pass": 1}),
            Q.pending: ["B"],
            Q.type_counts: counts(active__email=0, waiting__email=0, pending__email=1, processed__email=1),
            Q.events: Stream([event("A", "active", "done", worker=W), event("B", "waiting", "pending", worker=W)]),
        },
    ),
    Case(
        "with another dependency left, B keeps waiting and keeps A's result",
        A_ACTIVE
        | {
            Q.task("B"): waiting(["A", "C"], 2, **{"pass": 1}),
            Q.waiting: ZSet({"B": NOW_MS}),
            Q.dependents("A"): Set({"B"}),
            Q.dependents("C"): Set({"B"}),
            Q.type_counts: counts(active__email=1, waiting__email=1),
        },
        done(),
        returns=["OK"],
        after=COUNTED
        | {
            Q.task("B"): waiting(["A", "C"], 1, **{"pass": 1, "r:A": '"x"'}),
            Q.waiting: ZSet({"B": NOW_MS}),
            Q.dependents("C"): Set({"B"}),
            Q.type_counts: counts(active__email=0, waiting__email=1, processed__email=1),
            Q.events: Stream([event("A", "active", "done", worker=W)]),
        },
    ),
    Case(
        "the last member's success ends the workflow and drops its on_error callback",
        {
            Q.task("A"): active(wf="WF", role="member", result='"x"'),
            Q.lease: ZSet({"A": LEASE}),
            Q.task("e"): task("waiting", deps_left=0, wf="WF", role="on_error"),
            Q.waiting: ZSet({"e": NOW_MS}),
            Q.workflow("WF"): Hash(
                {
                    "state": "running",
                    "left": "1",
                    "on_error": "e",
                    "keep": "3600000",
                    "members": '[["A","email","member",[]],["e","email","on_error",[]]]',
                }
            ),
            Q.workflows: ZSet({"WF": NOW_MS, "old": NOW_MS - 3_600_001}),
            Q.type_counts: counts(active__email=1, waiting__email=1),
        },
        done(),
        returns=["OK"],
        after=COUNTED
        | {
            Q.workflow("WF"): Volatile(
                Hash(
                    {
                        "state": "succeeded",
                        "finished": str(NOW_MS),
                        "left": "0",
                        "on_error": "e",
                        "keep": "3600000",
                        "members": '[["A","email","member",[]],["e","email","on_error",[]]]',
                        "s:A": "succeeded",
                        "r:A": '"x"',
                        "s:e": "skipped",
                    }
                )
            ),
            Q.workflows: ZSet({"WF": NOW_MS}),
            Q.type_counts: counts(active__email=0, waiting__email=0, processed__email=1),
            Q.events: Stream(
                [
                    event("A", "active", "done", worker=W),
                    event("e", "waiting", "deleted", worker=W, error="workflow succeeded"),
                ]
            ),
        },
    ),
)
def test_done_releases(r, redis_url, case):
    run_case(r, redis_url, case)


def test_complete_releases(r, redis_url):
    run_case(
        r,
        redis_url,
        Case(
            "complete releases like done",
            A_ACTIVE | B_WAITS_FOR_A | {Q.type_counts: counts(active__email=1, waiting__email=1)},
            lambda t: t.complete("default", [("A", "tok-1", 60)], W),
            returns=["OK"],
            after=COUNTED
            | {
                Q.task("A"): task("completed", result='"x"', completed_at=NOW_MS, ran_ms=""),
                Q.completed: ZSet({"A": NOW_MS + 60_000}),
                Q.task("B"): task("pending", after='["A"]'),
                Q.pending: ["B"],
                Q.type_counts: counts(
                    active__email=0, completed__email=1, waiting__email=0, pending__email=1, processed__email=1
                ),
                Q.events: Stream(
                    [event("A", "active", "completed", worker=W), event("B", "waiting", "pending", worker=W)]
                ),
            },
        ),
    )


# -- failure archives dependents (archive, archive_task, delete_task) ---------------------------------------------

CHAIN_WAITING = {
    Q.task("B"): waiting(["A"], 1),
    Q.task("C"): waiting(["B"], 1),
    Q.waiting: ZSet({"B": NOW_MS, "C": NOW_MS}),
    Q.dependents("A"): Set({"B"}),
    Q.dependents("B"): Set({"C"}),
}
WHY_B = "dependency A failed: boom"
WHY_C = "dependency B failed: " + WHY_B
B_WAITS_FOR_PENDING_A = (
    A_PENDING
    | without(CHAIN_WAITING, Q.task("C"), Q.dependents("B"))
    | {Q.waiting: ZSet({"B": NOW_MS}), Q.type_counts: counts(pending__email=1, waiting__email=1)}
)


def failure_counted(**by_state_and_type: int) -> dict:
    """The counters after one attempt failed: processed and failed, in all, today and for its type (email), next to
    the per-type counts of the states (``counts``'s keywords)."""
    return {
        Q.processed: "1",
        Q.processed_on(DAY): Volatile("1"),
        Q.failed: "1",
        Q.failed_on(DAY): Volatile("1"),
        Q.type_counts: counts(**by_state_and_type, processed__email=1, failed__email=1),
    }


@cases(
    Case(
        "A archived by its worker: B and C, waiting in a line behind it, are archived with the reason",
        A_ACTIVE | CHAIN_WAITING | {Q.type_counts: counts(active__email=1, waiting__email=2)},
        lambda t: t.archive("default", "A", "tok-1", "boom", worker=W),
        after=failure_counted(active__email=0, waiting__email=0, archived__email=3)
        | {
            Q.task("A"): task("archived", result='"x"', error="boom", failed_at=NOW_MS, ran_ms="", retried=1),
            Q.task("B"): failed_dependency("A", "boom"),
            Q.task("C"): failed_dependency("B", WHY_B),
            Q.archived: ZSet({"A": NOW_MS, "B": NOW_MS, "C": NOW_MS}),
            Q.events: Stream(
                [
                    event("A", "active", "archived", worker=W, error="boom"),
                    event("B", "waiting", "archived", worker=W, error=WHY_B),
                    event("C", "waiting", "archived", worker=W, error=WHY_C),
                ]
            ),
        },
    ),
    Case(
        "A archived by an operator: the same",
        B_WAITS_FOR_PENDING_A,
        lambda t: t.archive_task("default", "A", "op"),
        after={
            Q.task("A"): task("archived"),
            Q.task("B"): failed_dependency("A", "archived by op"),
            Q.archived: ZSet({"A": NOW_MS, "B": NOW_MS}),
            Q.type_counts: counts(pending__email=0, waiting__email=0, archived__email=2),
            Q.events: Stream(
                [
                    event("A", "", "pending"),
                    event("A", "pending", "archived", worker="op", error="archived by op"),
                    event("B", "waiting", "archived", worker="op", error="dependency A failed: archived by op"),
                ]
            ),
        },
    ),
    Case(
        "A deleted before it ran: B is archived",
        B_WAITS_FOR_PENDING_A,
        lambda t: t.delete_task("default", "A", "op"),
        after={
            Q.task("B"): failed_dependency("A", "deleted by op"),
            Q.archived: ZSet({"B": NOW_MS}),
            Q.type_counts: counts(pending__email=0, waiting__email=0, archived__email=1),
            Q.events: Stream(
                [
                    event("A", "", "pending"),
                    event("B", "waiting", "archived", worker="op", error="dependency A failed: deleted by op"),
                    event("A", "pending", "deleted", worker="op", error="deleted by op"),
                ]
            ),
        },
    ),
)
def test_failure_archives_dependents(r, redis_url, case):
    run_case(r, redis_url, case)


MEMBERS = (
    '[["A","email","member",[]],["B","email","member",["A"]],["P","email","member",[]],["e","email","on_error",[]]]'
)
WORKFLOW = {
    Q.task("A"): active(wf="WF", role="member"),
    Q.lease: ZSet({"A": LEASE}),
    Q.task("B"): waiting(["A"], 1, wf="WF", role="member"),
    Q.task("P"): task("pending", wf="WF", role="member"),
    Q.pending: ["P"],
    Q.task("e"): task("waiting", deps_left=0, wf="WF", role="on_error"),
    Q.waiting: ZSet({"B": NOW_MS, "e": NOW_MS}),
    Q.dependents("A"): Set({"B"}),
    Q.workflow("WF"): Hash({"state": "running", "left": "3", "on_error": "e", "keep": "3600000", "members": MEMBERS}),
    Q.workflows: ZSet({"WF": NOW_MS}),
    Q.type_counts: counts(active__email=1, waiting__email=2, pending__email=1),
}
CANCEL_B = "cancelled: workflow member A (email) failed: boom"


def test_a_failed_member_fails_its_workflow(r, redis_url):
    run_case(
        r,
        redis_url,
        Case(
            "the waiting members are archived as cancelled, pending ones are left to run, on_error is released with "
            "the failure",
            WORKFLOW,
            lambda t: t.archive("default", "A", "tok-1", "boom", worker=W),
            after=without(WORKFLOW, Q.lease, Q.dependents("A"), Q.waiting)
            | failure_counted(active__email=0, waiting__email=0, pending__email=2, archived__email=2)
            | {
                Q.task("A"): task(
                    "archived", wf="WF", role="member", error="boom", failed_at=NOW_MS, ran_ms="", retried=1
                ),
                Q.task("B"): task("archived", after='["A"]', wf="WF", role="member", error=CANCEL_B, failed_at=NOW_MS),
                Q.task("e"): on_error_released("A", "boom"),
                Q.pending: ["e", "P"],
                Q.archived: ZSet({"A": NOW_MS, "B": NOW_MS}),
                Q.workflow("WF"): Volatile(
                    Hash(
                        {
                            "state": "failed",
                            "finished": str(NOW_MS),
                            "left": "3",
                            "on_error": "e",
                            "keep": "3600000",
                            "members": MEMBERS,
                            "failed": "A",
                            "error": "boom",
                            "s:A": "failed",
                            "s:B": "cancelled",
                        }
                    )
                ),
                Q.events: Stream(
                    [
                        event("A", "active", "archived", worker=W, error="boom"),
                        event("B", "waiting", "archived", worker=W, error=CANCEL_B),
                        event("e", "waiting", "pending", worker=W),
                    ]
                ),
            },
        ),
    )
