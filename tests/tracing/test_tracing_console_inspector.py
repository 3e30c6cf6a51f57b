"""The Inspector records the current trace context on the task it runs, edits or cancels (the CLI and any program
that calls it): a waiting task run now keeps both the results it was given and the context; a refused action
writes nothing; without a current span nothing is written."""

from __future__ import annotations

import json

import pytest

from taskq.queues.engine import Client, FailedPreconditionError, chain, sig, tracing
from taskq.queues.engine.operator_trace import OPERATOR_TRACEPARENT
from tests.engine.dbstate import dump


@pytest.fixture
def client(r, redis_url, clock):
    with Client(redis_url, clock=clock, policies=False) as c:
        yield c


def options(r, task_id: str) -> dict:
    return json.loads(r.hget(f"tq:{{default}}:t:{task_id}", "msg"))


def test_a_waiting_task_run_now_keeps_its_results_and_gets_the_context(spans, r, client, inspector):
    done = client.enqueue("fetch", {}, task_id="C")
    client.enqueue("store", {}, task_id="B", after=[done.id, client.enqueue("fetch", {}, task_id="A").id],
                   pass_results=True)  # fmt: skip
    broker = inspector.broker
    leased = broker.run(broker.transitions.dequeue("default", 2, 30, "w1", "tok-"))
    token = next(t.token for t in leased if t.id == "C")
    broker.run(broker.transitions.write_result("default", "C", token, "result", b"7"))
    broker.run(broker.transitions.done("default", [(t.id, t.token) for t in leased if t.id == "C"], "w1"))
    with tracing.tracer().start_as_current_span("operator") as span:
        inspector.run_task("default", "B")
    doc = options(r, "B")
    assert doc["results"] == [7, None]  # C's result, and none for A, which has not succeeded
    assert doc["headers"][OPERATOR_TRACEPARENT].split("-")[1] == f"{span.get_span_context().trace_id:032x}"


def test_a_refused_action_in_a_span_writes_nothing(spans, r, client, inspector):
    client.submit(chain(sig("x"), sig("y")), on_error=sig("alert", task_id="E"), workflow_id="wf")
    client.enqueue("fetch", {}, task_id="P")
    before = dump(r)
    with tracing.tracer().start_as_current_span("operator"):
        with pytest.raises(FailedPreconditionError, match="on_error callback"):
            inspector.run_task("default", "E")
        with pytest.raises(FailedPreconditionError, match="cannot be run now"):
            inspector.run_task("default", "P")
        with pytest.raises(FailedPreconditionError, match="not active"):
            inspector.cancel_task("default", "P")
    assert dump(r) == before


def test_without_a_span_the_options_are_untouched(spans, r, client, inspector):
    client.enqueue("fetch", {}, task_id="S", process_in=60)
    before = r.hget("tq:{default}:t:S", "msg")
    inspector.run_task("default", "S")
    assert r.hget("tq:{default}:t:S", "msg") == before
