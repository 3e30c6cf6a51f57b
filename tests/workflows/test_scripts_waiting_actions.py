"""State tables of the operator's ways out for a task waiting on its dependencies (issue 16): delete_task takes a
waiting task (before, it answered "task is waiting, cancel it before deleting"), and run_task runs one now without
its dependencies (before, it answered "it cannot be run now"). Every key is compared after each case; a refused
call changes nothing and says why."""

from __future__ import annotations

from taskq.queues.engine import FailedPreconditionError, TaskNotFoundError
from taskq.queues.engine.transitions import Call, Transitions
from tests.engine.dbstate import Hash, Set, ZSet
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import (
    NOW_MS,
    Q,
    acted,
    counts,
    failed_dependency,
    kept,
    moved_by,
    msg,
    on_error_released,
    task,
    waiting,
)

WHY_D = "dependency B failed: deleted by op"


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
            Q.task("D"): failed_dependency("B", "deleted by op"),
            Q.task("Z"): waiting(["A"], 1),
            Q.waiting: ZSet({"Z": NOW_MS}),
            Q.archived: ZSet({"D": NOW_MS}),
            Q.dependents("A"): Set({"Z"}),
            Q.type_counts: counts(pending__email=1, waiting__email=1, archived__email=1),
            Q.events: moved_by("op", ("D", "waiting", "archived", WHY_D), ("B", "waiting", "deleted", "deleted by op")),
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
            Q.events: moved_by("op", ("e", "waiting", "pending"), ("b", "waiting", "deleted", "deleted by op")),
        },
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
            Q.task("B"): kept(task("pending", after='["A", "C"]'), acted("run", by="op")),  # the audit log names it
            Q.pending: ["B", "A"],
            Q.waiting: ZSet({"D": NOW_MS, "Z": NOW_MS}),
            Q.dependents("A"): Set({"Z"}),
            Q.type_counts: counts(pending__email=2, waiting__email=2),
            Q.events: moved_by("op", ("B", "waiting", "pending")),
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
            Q.task("B"): kept(
                task(
                    "pending",
                    options=msg(results=[{"n": 1}, None]).replace(", ", ","),
                    after='["A", "C"]',
                    **{"pass": 1},
                ),
                acted("run", by="op"),
            ),
            Q.pending: ["B"],
            Q.type_counts: counts(waiting__email=0, pending__email=1),
            Q.events: moved_by("op", ("B", "waiting", "pending")),
        },
    ),
)
def test_run_waiting_now(r, redis_url, case):
    run_case(r, redis_url, case)


# Both ways out look the task up first; each refuses a task it must not take, and says why.
@cases(
    *(
        Case(f"{name}: an unknown task is refused", B_WAITS, call("nope"), raises=TaskNotFoundError, detail="nope")
        for name, call in (("delete", delete), ("run", run))
    ),
    Case(
        "delete: an active task is still refused, it must be cancelled first",
        {Q.task("A"): task("active", lease="tok"), Q.lease: ZSet({"A": NOW_MS + 5000})},
        delete("A"),
        raises=FailedPreconditionError,
        detail="task is active, cancel it before deleting",
    ),
    Case(
        "run: an on_error callback is refused, it runs only if its workflow fails",
        WORKFLOW,
        run("e"),
        raises=FailedPreconditionError,
        detail="task is the on_error callback of workflow WF, it runs only if the workflow fails; delete it instead",
    ),
    Case(
        "run: a pending task is refused",
        B_WAITS,
        run("A"),
        raises=FailedPreconditionError,
        detail="task is pending, it cannot be run now",
    ),
)
def test_refused_actions_on_a_waiting_task(r, redis_url, case):
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


def on_all_pending(action: str, verb: str) -> Case:
    """The bulk ``action`` on A_AND_B_PENDING's pending tasks, A and P (it returns 2): they are ``verb`` (deleted,
    or archived) and B, waiting for A, is archived with the reason, as when A alone is deleted or archived."""
    removed = [("A", "pending", verb, f"{verb} by op"), ("P", "pending", verb, f"{verb} by op")]
    dependent = ("B", "waiting", "archived", f"dependency A failed: {verb} by op")
    # delete_all archives a task's dependents before it deletes the task; archive_all archives the task first
    events = [dependent, *removed] if verb == "deleted" else [removed[0], dependent, removed[1]]
    kept = ["A", "P"] if verb == "archived" else []  # deleted tasks leave nothing behind
    after = {
        **{Q.task(task_id): task("archived") for task_id in kept},
        Q.task("B"): failed_dependency("A", f"{verb} by op"),
        Q.archived: ZSet(dict.fromkeys(["B", *kept], NOW_MS)),
        Q.type_counts: counts(pending__email=0, waiting__email=0, archived__email=1 + len(kept)),
        Q.events: moved_by("op", *events),
    }

    def call(t: Transitions) -> Call:
        return getattr(t, action)("default", "pending", "op")

    return Case(f"{action} pending", A_AND_B_PENDING, call, returns=2, after=after)


# delete_all: B is archived rather than left waiting forever for a task that is gone; archive_all: as archive_task.
@cases(on_all_pending("delete_all", "deleted"), on_all_pending("archive_all", "archived"))
def test_bulk_actions_fail_dependents(r, redis_url, case):
    run_case(r, redis_url, case)
