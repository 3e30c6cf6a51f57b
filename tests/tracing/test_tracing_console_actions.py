"""Operator actions carry the operator's trace context into the task's next attempt: run, edit and cancel from the
console's pages, the Django admin, the HTTP API and the CLI write the request's context (its current span, or its
own ``traceparent`` header) into the task's headers as ``taskq-operator-traceparent`` / ``-tracestate``, and the
action's event carries the trace id. Real Django test client, real Redis, the OpenTelemetry SDK."""

from __future__ import annotations

import pytest
from django.urls import reverse

from taskq.queues.api.tokens import create_token
from taskq.queues.engine import tracing
from taskq.queues.engine.operator_trace import OPERATOR_TRACEPARENT, OPERATOR_TRACESTATE
from tests.cli.helpers import invoke
from tests.console.console_support import logged_in, make_user

pytestmark = pytest.mark.django_db

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
REQUEST = {"HTTP_TRACEPARENT": TRACEPARENT, "HTTP_TRACESTATE": "ops=1"}
OPERATOR = {OPERATOR_TRACEPARENT: TRACEPARENT, OPERATOR_TRACESTATE: "ops=1"}


@pytest.fixture
def operator_client(db):
    return logged_in(make_user("otto", "view_console", "operate_console", "edit_task"))


def parent_of(span) -> str:
    """The W3C traceparent of ``span`` without its flags (the SDK's random-trace-id flag varies by version)."""
    ids = span.get_span_context()
    return f"00-{ids.trace_id:032x}-{ids.span_id:016x}"


def operator_headers(engine, task_id: str) -> dict[str, str]:
    headers = engine.get_task("default", task_id).headers
    return {name: value for name, value in headers.items() if name.startswith("taskq-operator-")}


def action_traces(engine, task_id: str) -> list[str]:
    """The trace ids the task's events carry (an operator's action with a context)."""
    return [event.trace for event in engine.task_events("default", task_id) if event.trace]


def batch(client, action: str, task_id: str, **headers: str):
    response = client.post("/queues/default/batch/", {"action": action, "task_ids": [task_id]}, **headers)
    assert response.status_code == 302
    return response


def test_run_from_the_console_records_the_request_traceparent(spans, operator_client, seed, engine):
    task_id = seed.retry()
    batch(operator_client, "run", task_id, **REQUEST)
    assert engine.get_task("default", task_id).state == "pending"
    assert operator_headers(engine, task_id) == OPERATOR
    assert action_traces(engine, task_id) == [TRACE]


def test_the_current_span_of_the_request_wins_over_its_header(spans, operator_client, seed, engine):
    """What a Django OpenTelemetry instrumentation does: a server span is current while the view runs."""
    task_id = seed.archived()
    with tracing.tracer().start_as_current_span("POST /queues/default/batch/") as span:
        batch(operator_client, "run", task_id, **REQUEST)
    headers = operator_headers(engine, task_id)
    assert list(headers) == [OPERATOR_TRACEPARENT] and headers[OPERATOR_TRACEPARENT][:-3] == parent_of(span)
    assert action_traces(engine, task_id) == [f"{span.get_span_context().trace_id:032x}"]


@pytest.mark.parametrize(
    "traceparent",
    ["garbage", f"00-{'0' * 32}-00f067aa0ba902b7-01", f"ff-{TRACE}-00f067aa0ba902b7-01", f"00-{TRACE.upper()}-x-01"],
)
def test_a_malformed_traceparent_is_ignored(spans, operator_client, seed, engine, traceparent):
    task_id = seed.retry()
    before = engine.get_task("default", task_id).headers
    batch(operator_client, "run", task_id, HTTP_TRACEPARENT=traceparent)
    assert engine.get_task("default", task_id).state == "pending"
    assert engine.get_task("default", task_id).headers == before and action_traces(engine, task_id) == []


def test_without_a_context_the_message_is_untouched(spans, operator_client, seed, engine, redis_client):
    task_id = seed.retry()
    key = f"tq:{{default}}:t:{task_id}"
    options = redis_client.hget(key, "msg")
    batch(operator_client, "run", task_id)
    assert redis_client.hget(key, "msg") == options and action_traces(engine, task_id) == []


def test_a_newer_action_replaces_an_older_operator_context(spans, operator_client, seed, engine):
    task_id = seed.retry()
    older = f"00-{'1' * 32}-{'2' * 16}-01"
    batch(operator_client, "run", task_id, HTTP_TRACEPARENT=older, HTTP_TRACESTATE="old=1")
    engine.archive_task("default", task_id)
    batch(operator_client, "run", task_id, HTTP_TRACEPARENT=TRACEPARENT)
    assert operator_headers(engine, task_id) == {OPERATOR_TRACEPARENT: TRACEPARENT}  # no older tracestate left
    assert action_traces(engine, task_id) == ["1" * 32, TRACE]


def test_edit_and_run_records_the_context(spans, operator_client, seed, engine):
    task_id = seed.retry()
    url = reverse("taskq:task-edit", args=["default", task_id])
    response = operator_client.post(url, {"payload": '{"to": "bob"}', "encoding": "json", "queue": ""}, **REQUEST)
    assert response.status_code == 302
    assert operator_headers(engine, task_id) == OPERATOR and action_traces(engine, task_id) == [TRACE]


def test_cancel_records_the_context_on_the_running_task(spans, operator_client, seed, engine):
    task_id, _ = seed.active()
    batch(operator_client, "cancel", task_id, **REQUEST)
    task = engine.get_task("default", task_id)
    assert task.state == "active" and operator_headers(engine, task_id) == OPERATOR  # the worker stops it


def test_run_all_writes_no_context(spans, operator_client, seed, engine):
    """A bulk action on a whole state moves tasks in chunks without reading their messages: none gets a context."""
    task_id = seed.retry()
    response = operator_client.post("/queues/default/all/", {"action": "run_all", "state": "retry"}, **REQUEST)
    assert response.status_code == 302 and engine.get_task("default", task_id).state == "pending"
    assert operator_headers(engine, task_id) == {} and action_traces(engine, task_id) == []


def test_the_admin_run_records_the_context(spans, seed, engine):
    task_id = seed.archived()
    admin = logged_in(make_user("root", is_staff=True, is_superuser=True))
    form = {"queue": "default", "state": "archived", "page": "1", "action": "run", "task_ids": [task_id]}
    assert admin.post("/admin/taskq/tasks/", form, **REQUEST).status_code == 302
    assert engine.get_task("default", task_id).state == "pending"
    assert operator_headers(engine, task_id) == OPERATOR


def test_the_api_respawn_records_the_context(spans, seed, engine, client):
    task_id = seed.archived()
    secret = create_token("svc", ["*"])[1]
    url = f"/api/v1/queues/default/deadletters/{task_id}/respawn"
    response = client.post(url, "{}", "application/json", HTTP_AUTHORIZATION=f"Bearer {secret}", **REQUEST)
    assert response.status_code == 200, response.content
    assert operator_headers(engine, task_id) == OPERATOR


def test_the_cli_records_the_current_context(spans, seed, engine):
    task_id = seed.retry()
    with tracing.tracer().start_as_current_span("deploy script") as span:
        assert invoke("task", "run", task_id, "--queue", "default").code == 0
    headers = operator_headers(engine, task_id)
    assert list(headers) == [OPERATOR_TRACEPARENT] and headers[OPERATOR_TRACEPARENT][:-3] == parent_of(span)
