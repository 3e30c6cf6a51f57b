"""State tables of the operator's actions on a whole workflow (issue 23): retry a failed workflow from where it
failed (``lua/workflow_retry.lua``), cancel the rest of it (``lua/workflow_cancel.lua``), and archive its steps
that have not started so that it fails now (``lua/workflow_archive.lua``). Every key is compared after each case;
a refused call changes nothing and says why."""

from __future__ import annotations

import json

from taskq.queues.engine import FailedPreconditionError, TaskNotFoundError
from taskq.queues.engine.workflows import action_call
from tests.engine.dbstate import Hash, Set, Stream, ZSet, hash_with
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import NOW_MS, Q, counts, moved_by, msg, on_error_released, task

CHAIN = [["a", "email", "member", []], ["b", "email", "member", ["a"]], ["c", "email", "member", ["b"]]]
MEMBERS = json.dumps([*CHAIN, ["e", "email", "on_error", []]], separators=(",", ":"))
ARCHIVED = "archived by op"
CANCELLED = f"cancelled: workflow member a (email) failed: {ARCHIVED}"
CASCADE = f"dependency b failed: {CANCELLED}"


def act(name: str, workflow: str = "WF"):
    return lambda t: action_call(t, name, "default", workflow, "op")


def by_op(*moves: tuple[str, ...]) -> Stream:
    """The events the operator's action appends: (task, from, to[, error]) each."""
    return moved_by("op", *moves)


def member(state: str, **extra) -> Hash:
    return task(state, wf="WF", role="member", **extra)


def waiting(after: list[str], left: int, **extra) -> Hash:
    return member("waiting", after=json.dumps(after), deps_left=left, **extra)


def record(state: str, left: int = 3, members: str = MEMBERS, **fields: str) -> Hash:
    return Hash({"state": state, "left": str(left), "on_error": "e", "keep": "0", "members": members, **fields})


# A chain a -> b -> c with an on_error callback e; a waits for its 5th attempt (the issue's "4 of 25 retries").
STUCK = {
    Q.task("a"): member("retry", retried=4, error="boom"),
    Q.retry: ZSet({"a": NOW_MS + 60_000}),
    Q.task("b"): waiting(["a"], 1),
    Q.task("c"): waiting(["b"], 1),
    Q.task("e"): task("waiting", wf="WF", role="on_error", deps_left=0),
    Q.waiting: ZSet({"b": NOW_MS, "c": NOW_MS, "e": NOW_MS}),
    Q.dependents("a"): Set({"b"}),
    Q.dependents("b"): Set({"c"}),
    Q.workflow("WF"): record("running"),
    Q.type_counts: counts(retry__email=1, waiting__email=3),
}
# STUCK after the archive below: a failed, b and c cancelled, e released with the failure.
FAILED = {
    Q.task("a"): member("archived", retried=4, error=ARCHIVED, failed_at=NOW_MS),
    Q.task("b"): member("archived", after='["a"]', error=CANCELLED, failed_at=NOW_MS),
    Q.task("c"): member("archived", after='["b"]', error=CASCADE, failed_at=NOW_MS),
    Q.task("e"): on_error_released("a", ARCHIVED),
    Q.pending: ["e"],
    Q.archived: ZSet({"a": NOW_MS, "b": NOW_MS, "c": NOW_MS}),
    Q.workflow("WF"): record(
        "failed",
        finished=str(NOW_MS),
        failed="a",
        error=ARCHIVED,
        **{"s:a": "failed", "s:b": "cancelled", "s:c": "cancelled"},
    ),
    Q.type_counts: counts(retry__email=0, waiting__email=0, archived__email=3, pending__email=1),
}


@cases(
    Case(
        "the retrying step is archived: the workflow fails, the rest of the chain is cancelled, on_error runs",
        STUCK,
        act("workflow_archive"),
        returns=1,
        after={
            **FAILED,
            Q.events: by_op(
                ("a", "retry", "archived", ARCHIVED),
                ("b", "waiting", "archived", CANCELLED),
                ("c", "waiting", "archived", CASCADE),
                ("e", "waiting", "pending"),
            ),
        },
    ),
    Case(
        "a failed workflow is refused: it is not running",
        FAILED,
        act("workflow_archive"),
        raises=FailedPreconditionError,
        detail="workflow is failed, not running",
    ),
    Case(
        "a running workflow whose step runs now is refused: nothing has not started",
        {k: v for k, v in STUCK.items() if k != Q.retry}
        | {Q.task("a"): member("active"), Q.lease: ZSet({"a": NOW_MS})},
        act("workflow_archive"),
        raises=FailedPreconditionError,
        detail="no member of the workflow is pending, scheduled or retrying",
    ),
)
def test_archive_workflow(r, redis_url, case):
    run_case(r, redis_url, case)


# Every operator action on a workflow looks the workflow up first, and another workflow's state does not matter.
@cases(
    *(
        Case(f"{name}: an unknown workflow is refused", STUCK, act(name, "nope"), raises=TaskNotFoundError)
        for name in ("workflow_archive", "workflow_cancel", "workflow_retry")
    )
)
def test_an_unknown_workflow_is_refused(r, redis_url, case):
    run_case(r, redis_url, case)


CANCEL = "cancelled by op"


def failed_with_p(**outcomes: str) -> Hash:
    """FAILED's record with one more member p, pending when the workflow failed."""
    members = json.dumps([*CHAIN, ["p", "email", "member", []], ["e", "email", "on_error", []]])
    return Hash({**FAILED[Q.workflow("WF")], "members": members, "left": "4", **outcomes})


@cases(
    Case(
        "a stuck workflow is cancelled: every member not started is archived in its own name, on_error dropped",
        STUCK,
        act("workflow_cancel"),
        returns=4,
        after={
            Q.task("a"): member("archived", retried=4, error=CANCEL, failed_at=NOW_MS),
            Q.task("b"): member("archived", after='["a"]', error=CANCEL, failed_at=NOW_MS),
            Q.task("c"): member("archived", after='["b"]', error=CANCEL, failed_at=NOW_MS),
            Q.archived: ZSet({"a": NOW_MS, "b": NOW_MS, "c": NOW_MS}),
            Q.workflow("WF"): record(
                "cancelled",
                finished=str(NOW_MS),
                error=CANCEL,
                **{"s:a": "cancelled", "s:b": "cancelled", "s:c": "cancelled", "s:e": "skipped"},
            ),
            Q.type_counts: counts(retry__email=0, waiting__email=0, archived__email=3),
            Q.events: by_op(
                ("e", "waiting", "deleted", f"workflow {CANCEL}"),
                ("c", "waiting", "archived", CANCEL),
                ("b", "waiting", "archived", CANCEL),
                ("a", "retry", "archived", CANCEL),
            ),
        },
    ),
    Case(
        "a failed workflow with a member still pending: that member is cancelled, the released on_error is left",
        {
            **FAILED,
            Q.task("p"): member("pending"),
            Q.pending: ["p", "e"],
            Q.workflow("WF"): failed_with_p(),
            Q.type_counts: counts(retry__email=0, waiting__email=0, archived__email=3, pending__email=2),
        },
        act("workflow_cancel"),
        returns=1,
        after={
            **FAILED,
            Q.task("p"): member("archived", error=CANCEL, failed_at=NOW_MS),
            Q.archived: ZSet({"a": NOW_MS, "b": NOW_MS, "c": NOW_MS, "p": NOW_MS}),
            Q.workflow("WF"): failed_with_p(**{"s:p": "cancelled"}),
            Q.type_counts: counts(retry__email=0, waiting__email=0, archived__email=4, pending__email=1),
            Q.events: by_op(("p", "pending", "archived", CANCEL)),
        },
    ),
    Case(
        "a failed workflow with nothing left to run is refused",
        FAILED,
        act("workflow_cancel"),
        raises=FailedPreconditionError,
        detail="workflow is failed, nothing of it is left to run",
    ),
    Case(
        "a succeeded workflow is refused",
        {Q.workflow("WF"): record("succeeded", 0)},
        act("workflow_cancel"),
        raises=FailedPreconditionError,
        detail="workflow is succeeded, there is nothing to cancel",
    ),
)
def test_cancel_workflow(r, redis_url, case):
    run_case(r, redis_url, case)


# parallel(chain(a, x), chain(b, y)) where a failed: x was cancelled as a's dependent, y with the workflow; b has
# succeeded since (its result recorded), so y, which asked for results, can run at once when the workflow retries.
BRANCHES = json.dumps(
    [
        ["a", "email", "member", []],
        ["x", "email", "member", ["a"]],
        ["b", "email", "member", []],
        ["y", "email", "member", ["b"]],
    ],
    separators=(",", ":"),
)
BRANCH_FAILED = {
    Q.task("a"): member("archived", retried=25, error="boom", failed_at=NOW_MS),
    Q.task("x"): member("archived", after='["a"]', error="dependency a failed: boom", failed_at=NOW_MS),
    Q.task("y"): member("archived", after='["b"]', error="cancelled: ...", failed_at=NOW_MS, **{"pass": 1}),
    Q.archived: ZSet({"a": NOW_MS, "x": NOW_MS, "y": NOW_MS}),
    Q.workflow("WF"): Hash(
        {
            "state": "failed",
            "left": "3",
            "keep": "0",
            "members": BRANCHES,
            "failed": "a",
            "error": "boom",
            "finished": str(NOW_MS),
            "s:a": "failed",
            "s:x": "cancelled",
            "s:y": "cancelled",
            "s:b": "succeeded",
            "r:b": '{"n":7}',
        }
    ),
    Q.type_counts: counts(archived__email=3),
}


@cases(
    Case(
        "a failed workflow runs again: the failed step pending, the cancelled ones waiting for it again",
        FAILED,
        act("workflow_retry"),
        returns=3,
        after={
            Q.task("a"): hash_with(FAILED[Q.task("a")], state="pending"),  # its tries and last error kept
            Q.task("b"): waiting(["a"], 1),
            Q.task("c"): waiting(["b"], 1),
            Q.task("e"): on_error_released("a", ARCHIVED),
            Q.pending: ["a", "e"],
            Q.waiting: ZSet({"b": NOW_MS, "c": NOW_MS}),
            Q.dependents("a"): Set({"b"}),
            Q.dependents("b"): Set({"c"}),
            Q.workflow("WF"): record("running"),
            Q.type_counts: counts(retry__email=0, waiting__email=2, archived__email=0, pending__email=2),
            Q.events: by_op(("a", "archived", "pending"), ("b", "archived", "waiting"), ("c", "archived", "waiting")),
        },
    ),
    Case(
        "a cancelled member whose dependencies succeeded meanwhile runs at once, with their results",
        BRANCH_FAILED,
        act("workflow_retry"),
        returns=3,
        after={
            Q.task("a"): hash_with(BRANCH_FAILED[Q.task("a")], state="pending"),
            Q.task("x"): waiting(["a"], 1),
            Q.task("y"): member(
                "pending", after='["b"]', options=msg(results=[{"n": 7}]).replace(", ", ","), **{"pass": 1}
            ),
            Q.pending: ["y", "a"],
            Q.waiting: ZSet({"x": NOW_MS}),
            Q.dependents("a"): Set({"x"}),
            Q.workflow("WF"): Hash(
                {
                    "state": "running",
                    "left": "3",
                    "keep": "0",
                    "members": BRANCHES,
                    "s:b": "succeeded",
                    "r:b": '{"n":7}',
                }
            ),
            Q.type_counts: counts(archived__email=0, pending__email=2, waiting__email=1),
            Q.events: by_op(("a", "archived", "pending"), ("x", "archived", "waiting"), ("y", "archived", "pending")),
        },
    ),
    Case(
        "a running workflow is refused",
        STUCK,
        act("workflow_retry"),
        raises=FailedPreconditionError,
        detail="workflow is running, only a failed workflow can be retried",
    ),
    Case(
        "a failed member deleted since is refused, all or nothing: the others stay archived",
        {k: v for k, v in FAILED.items() if k not in (Q.task("a"), Q.archived)}
        | {Q.archived: ZSet({"b": NOW_MS, "c": NOW_MS})},
        act("workflow_retry"),
        raises=FailedPreconditionError,
        detail="member a (email) failed and is no longer stored: it cannot be run again as part of the workflow",
    ),
)
def test_retry_workflow(r, redis_url, case):
    run_case(r, redis_url, case)
