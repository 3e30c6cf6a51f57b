"""State tables of the operator's ways out for a task waiting on its dependencies (issue 16): delete_task takes a
waiting task (before, it answered "task is waiting, cancel it before deleting"), and run_task runs one now without
its dependencies (before, it answered "it cannot be run now"). Every key is compared after each case; a refused
call changes nothing and says why."""

from __future__ import annotations

import json

from queues.engine import FailedPreconditionError, TaskNotFoundError
from tests.engine.dbstate import Hash, Set, Stream, ZSet
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import NOW_MS, Q, counts, event, msg, on_error_released, task

WHY_D = "dependency B failed: deleted by op"


def waiting(after: list[str], left: int, **extra) -> Hash:
    return task("waiting", after=json.dumps(after), deps_left=left, **extra)


def delete(task_id: str):
    return lambda t: t.delete_task("default", task_id, "op")


def run(task_id: str):
    return lambda t: t.run_task("default", task_id, "op")


# B waits for A (pending) and C (not submitted yet); D waits for B. Z waits for A too.
B_WAITS = {
    Q.task("A"): task("pending"),
    Q.pending: ["A"],
    Q.task("B"): waiting(["A", "C"], 2),
    Q.task("D"): waiting(["B"], 1),
    Q.task("Z"): waiting(["A"], 1),
    Q.waiting: ZSet({"B": NOW_MS, "D": NOW_MS, "Z": NOW_MS}),
    Q.dependents("A"): Set({"B", "Z"}),
    Q.dependents("C"): Set({"B"}),
    Q.dependents("B"): Set({"D"}),
    Q.type_counts: counts(pending__email=1, waiting__email=3),
}
WORKFLOW = {
    Q.task("a"): task("pending", wf="WF", role="member"),
    Q.pending: ["a"],
    Q.task("b"): waiting(["a"], 1, wf="WF", role="member"),
    Q.task("e"): task("waiting", deps_left=0, wf="WF", role="on_error"),
    Q.waiting: ZSet({"b": NOW_MS, "e": NOW_MS}),
    Q.dependents("a"): Set({"b"}),
    Q.workflow("WF"): Hash(
        {
            "state": "running",
            "left": "2",
            "on_error": "e",
            "keep": "0",
            "members": '[["a","email","member",[]],["b","email","member",["a"]],["e","email","on_error",[]]]',
        }
    ),
    Q.type_counts: counts(pending__email=1, waiting__email=2),
}


@cases(
    Case(
        "a waiting B is deleted: it leaves the dependency sets, D waiting for it is archived as when B fails",
        B_WAITS,
        delete("B"),
        after={
            Q.task("A"): task("pending"),
            Q.pending: ["A"],
            Q.task("D"): task("archived", after='["B"]', error=WHY_D, failed_at=NOW_MS),
            Q.task("Z"): waiting(["A"], 1),
            Q.waiting: ZSet({"Z": NOW_MS}),
            Q.archived: ZSet({"D": NOW_MS}),
            Q.dependents("A"): Set({"Z"}),
            Q.type_counts: counts(pending__email=1, waiting__email=1, archived__email=1),
            Q.events: Stream(
                [
                    event("D", "waiting", "archived", worker="op", error=WHY_D),
                    event("B", "waiting", "deleted", worker="op", error="deleted by op"),
                ]
            ),
        },
    ),
    Case(
        "a waiting workflow member is deleted: its workflow fails and its on_error callback is released",
        WORKFLOW,
        delete("b"),
        after={
            Q.task("a"): task("pending", wf="WF", role="member"),
            Q.task("e"): on_error_released("b", "deleted by op"),
            Q.pending: ["e", "a"],
            Q.workflow("WF"): Hash(
                {
                    "state": "failed",
                    "finished": str(NOW_MS),
                    "left": "2",
                    "on_error": "e",
                    "keep": "0",
                    "members": WORKFLOW[Q.workflow("WF")]["members"],
                    "failed": "b",
                    "error": "deleted by op",
                    "s:b": "failed",
                }
            ),
            Q.type_counts: counts(pending__email=2, waiting__email=0),
            Q.events: Stream(
                [
                    event("e", "waiting", "pending", worker="op"),
                    event("b", "waiting", "deleted", worker="op", error="deleted by op"),
                ]
            ),
        },
    ),
    Case("an unknown task is refused", B_WAITS, delete("nope"), raises=TaskNotFoundError, detail="nope"),
    Case(
        "an active task is still refused: it must be cancelled first",
        {Q.task("A"): task("active", lease="tok"), Q.lease: ZSet({"A": NOW_MS + 5000})},
        delete("A"),
        raises=FailedPreconditionError,
        detail="task is active, cancel it before deleting",
    ),
)
def test_delete_waiting(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "a waiting B runs now: pending, out of the dependency sets; D still waits for B to succeed",
        B_WAITS,
        run("B"),
        after={
            **{k: v for k, v in B_WAITS.items() if k != Q.dependents("C")},
            Q.task("B"): task("pending", after='["A", "C"]'),
            Q.pending: ["B", "A"],
            Q.waiting: ZSet({"D": NOW_MS, "Z": NOW_MS}),
            Q.dependents("A"): Set({"Z"}),
            Q.type_counts: counts(pending__email=2, waiting__email=2),
            Q.events: Stream([event("B", "waiting", "pending", worker="op")]),
        },
    ),
    Case(
        "a waiting task that asked for results gets those collected so far, null for the others",
        {
            Q.task("B"): waiting(["A", "C"], 1, **{"pass": 1, "r:A": '{"n":1}'}),
            Q.waiting: ZSet({"B": NOW_MS}),
            Q.dependents("C"): Set({"B"}),
            Q.type_counts: counts(waiting__email=1),
        },
        run("B"),
        after={
            Q.task("B"): task(
                "pending", options=msg(results=[{"n": 1}, None]).replace(", ", ","), after='["A", "C"]', **{"pass": 1}
            ),
            Q.pending: ["B"],
            Q.type_counts: counts(waiting__email=0, pending__email=1),
            Q.events: Stream([event("B", "waiting", "pending", worker="op")]),
        },
    ),
    Case(
        "an on_error callback is refused: it runs only if its workflow fails",
        WORKFLOW,
        run("e"),
        raises=FailedPreconditionError,
        detail="task is the on_error callback of workflow WF, it runs only if the workflow fails; delete it instead",
    ),
    Case(
        "a pending task is refused",
        B_WAITS,
        run("A"),
        raises=FailedPreconditionError,
        detail="task is pending, it cannot be run now",
    ),
    Case("an unknown task is refused", B_WAITS, run("nope"), raises=TaskNotFoundError, detail="nope"),
)
def test_run_waiting_now(r, redis_url, case):
    run_case(r, redis_url, case)


# -- the bulk actions fail dependents as the single ones do -----------------------------------------------------

A_AND_B_PENDING = {
    Q.task("A"): task("pending"),
    Q.task("P"): task("pending"),
    Q.pending: ["P", "A"],
    Q.task("B"): waiting(["A"], 1),
    Q.waiting: ZSet({"B": NOW_MS}),
    Q.dependents("A"): Set({"B"}),
    Q.type_counts: counts(pending__email=2, waiting__email=1),
}


@cases(
    Case(
        "delete all pending: B, waiting for A, is archived instead of waiting forever for a task that is gone",
        A_AND_B_PENDING,
        lambda t: t.delete_all("default", "pending", "op"),
        returns=2,
        after={
            Q.task("B"): task("archived", after='["A"]', error="dependency A failed: deleted by op", failed_at=NOW_MS),
            Q.archived: ZSet({"B": NOW_MS}),
            Q.type_counts: counts(pending__email=0, waiting__email=0, archived__email=1),
            Q.events: Stream(
                [
                    event("B", "waiting", "archived", worker="op", error="dependency A failed: deleted by op"),
                    event("A", "pending", "deleted", worker="op", error="deleted by op"),
                    event("P", "pending", "deleted", worker="op", error="deleted by op"),
                ]
            ),
        },
    ),
    Case(
        "archive all pending: B, waiting for A, is archived as with archive_task",
        A_AND_B_PENDING,
        lambda t: t.archive_all("default", "pending", "op"),
        returns=2,
        after={
            Q.task("A"): task("archived"),
            Q.task("P"): task("archived"),
            Q.task("B"): task("archived", after='["A"]', error="dependency A failed: archived by op", failed_at=NOW_MS),
            Q.archived: ZSet({"A": NOW_MS, "B": NOW_MS, "P": NOW_MS}),
            Q.type_counts: counts(pending__email=0, waiting__email=0, archived__email=3),
            Q.events: Stream(
                [
                    event("A", "pending", "archived", worker="op", error="archived by op"),
                    event("B", "waiting", "archived", worker="op", error="dependency A failed: archived by op"),
                    event("P", "pending", "archived", worker="op", error="archived by op"),
                ]
            ),
        },
    ),
)
def test_bulk_actions_fail_dependents(r, redis_url, case):
    run_case(r, redis_url, case)
