"""State tables of the operator's trace context in the action scripts (operator_mark in lua/_lib.lua): run_task and
cancel_task write the task's options with the operator's context only if they are still the ones read, and the
action's event carries the trace id; edit_task's event carries it too. Every key is compared after each call."""

from __future__ import annotations

import json

from taskq.queues.engine import FailedPreconditionError, TaskNotFoundError, operator_trace
from taskq.queues.engine.keys import cancel_message
from taskq.queues.engine.operator_trace import OPERATOR_TRACEPARENT, OperatorMark
from tests.engine.dbstate import Stream, hash_with
from tests.engine.script_runs import Case, cases, run_case
from tests.engine.task_state import Q, acted, event, msg
from tests.engine.test_scripts_operator import OP, edit, edited_a, one_in, ran_a

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
CONTEXT = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "p=1"}
MARKED = msg(headers={**CONTEXT, OPERATOR_TRACEPARENT: TRACEPARENT})
MARK = OperatorMark(msg(headers=CONTEXT).encode(), MARKED.encode(), TRACE)
STALE = OperatorMark(msg(headers={"traceparent": CONTEXT["traceparent"]}).encode(), MARKED.encode(), TRACE)


def with_context(state: str) -> dict:
    """one_in(state), its options carrying the producer's context."""
    before = one_in(state)
    return before | {Q.task("a"): hash_with(before[Q.task("a")], msg=msg(headers=CONTEXT))}


def run(mark: OperatorMark, task_id: str = "a"):
    return lambda t: t.run_task("default", task_id, OP, mark)


def ran_marked(state: str) -> dict:
    """with_context(state) after a run with MARK: pending, the options with the operator's context, the event
    carrying its trace id."""
    after = ran_a(state, acted("run"), before=with_context(state))
    after[Q.task("a")] = hash_with(after[Q.task("a")], msg=MARKED)
    after[Q.events] = Stream([event("a", state, "pending", worker=OP) | {"trace": TRACE}])
    return after


@cases(
    Case("run retry, marked", with_context("retry"), run(MARK), after=ran_marked("retry")),
    Case("run archived, marked", with_context("archived"), run(MARK), after=ran_marked("archived")),
    Case(
        "run: options changed since read: refused, nothing written",
        with_context("retry"),
        run(STALE),
        raises=FailedPreconditionError,
    ),
    Case(
        "run pending, marked: refused, nothing written",
        with_context("pending"),
        run(MARK),
        raises=FailedPreconditionError,
    ),
    Case("run unknown, marked", with_context("retry"), run(MARK, "nope"), raises=TaskNotFoundError, detail="nope"),
)
def test_run_task_records_the_operator_context(r, redis_url, case):
    run_case(r, redis_url, case)


def edited_marked() -> dict:
    after = edited_a("retry")
    after[Q.events] = Stream([event("a", "retry", "pending", worker=OP) | {"trace": TRACE}])
    return after


def edit_traced(t):
    options = b'{"v":1,"created":1,"max_retry":2}'
    return t.edit_task("default", "a", b'{"to":"bob"}', options, OP, "", TRACE)


@cases(
    Case("edit with a trace id: the event carries it", one_in("retry"), edit_traced, after=edited_marked()),
    Case("edit without: as before", one_in("retry"), edit(), after=edited_a("retry")),
)
def test_edit_task_event_carries_the_trace(r, redis_url, case):
    run_case(r, redis_url, case)


CHANNEL = "tq:cancel:3"


def cancel(mark: OperatorMark, task_id: str = "a"):
    return lambda t: t.cancel_task("default", task_id, CHANNEL, cancel_message("default", task_id), mark)


def cancelled_marked() -> dict:
    """with_context("active") after a marked cancel: still active, its options with the operator's context."""
    before = with_context("active")
    return before | {Q.task("a"): hash_with(before[Q.task("a")], msg=MARKED)}


@cases(
    Case(
        "cancel active, marked: no worker listens",
        with_context("active"),
        cancel(MARK),
        after=cancelled_marked(),
        returns=0,
    ),
    Case("cancel: options changed since read", with_context("active"), cancel(STALE), raises=FailedPreconditionError),
    *(
        Case(f"cancel {state}: refused", with_context(state), cancel(MARK), raises=FailedPreconditionError)
        for state in ("pending", "retry")
    ),
    Case("cancel unknown", with_context("active"), cancel(MARK, "nope"), raises=TaskNotFoundError, detail="nope"),
)
def test_cancel_task_records_the_operator_context(r, redis_url, case):
    run_case(r, redis_url, case)


def test_the_marked_options_keep_every_other_header_and_replace_an_older_operator_context():

    older = msg(
        headers={
            **CONTEXT,
            OPERATOR_TRACEPARENT: "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
            "taskq-operator-tracestate": "old=1",
            "mine": "kept",
        }
    ).encode()
    mark = operator_trace.mark(older, {OPERATOR_TRACEPARENT: TRACEPARENT})
    assert mark is not None and mark.expected == older and mark.trace_id == TRACE
    doc = json.loads(mark.options)
    assert doc["headers"] == {**CONTEXT, "mine": "kept", OPERATOR_TRACEPARENT: TRACEPARENT}
    assert {k: v for k, v in doc.items() if k != "headers"} == {
        k: v for k, v in json.loads(older).items() if k != "headers"
    }
    # options whose headers are not an object, or that are not JSON: left as they are
    assert operator_trace.mark(b'{"v":1,"created":1,"headers":"x"}', {OPERATOR_TRACEPARENT: TRACEPARENT}) is None
    assert operator_trace.mark(b"not json", {OPERATOR_TRACEPARENT: TRACEPARENT}) is None
    assert operator_trace.mark(older, {}) is None
