"""One trace from a request to the task's last attempt, as an application sees it, with every parent exact: a
first attempt that fails and its retry that completes, each a ``process`` span under the producer's ``send`` span,
which is a child of the request's span. The request is a project's own Django view, traced by OpenTelemetry's
Django instrumentation, whose real client enqueues inside it; or a publish to the HTTP API from a client that sends
its own ``traceparent``."""

from __future__ import annotations

import pytest
import tracing_views
from django.test import Client as DjangoClient
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.trace import SpanKind, StatusCode
from worker_support import state_of, wait_for

from taskq.queues import handles
from taskq.queues.api.tokens import create_token
from taskq.queues.engine import Task, handler

Q = "default"


def ended(spans, name: str, count: int) -> list:
    """The ended spans named ``name``, oldest first, once there are ``count`` of them."""

    def found() -> list | None:
        named = [s for s in spans.get_finished_spans() if s.name == name]
        return sorted(named, key=lambda s: s.start_time) if len(named) >= count else None

    return wait_for(found, what=f"{count} span(s) {name!r}")


def fails_once(registry) -> None:
    @handler("shop:receipt", registry=registry, retry_delay=lambda *_: 5.0)
    def receipt(task: Task) -> None:
        if task.retried == 0:
            raise ConnectionError("SMTP 451: try later")


def check_attempts(spans, send, make_server, inspector, clock, task_id: str) -> None:
    """Run the task (a failure, then its retry) and check both attempts' spans: children of ``send``."""
    make_server()
    wait_for(lambda: state_of(inspector, Q, task_id) == "retry", what="the first attempt's failure")
    clock.advance(6)
    wait_for(lambda: state_of(inspector, Q, task_id) in ("completed", None), what="the retry's success")
    failed, done = ended(spans, f"process {Q}", 2)
    for span, number in ((failed, 1), (done, 2)):
        assert span.kind is SpanKind.CONSUMER and span.context.trace_id == send.context.trace_id
        assert span.parent.span_id == send.context.span_id
        assert (span.attributes["messaging.message.id"], span.attributes["taskq.attempt"]) == (task_id, number)
    assert failed.attributes["taskq.outcome"] == "retry" and failed.status.status_code is StatusCode.ERROR
    assert [e.attributes["exception.type"] for e in failed.events] == ["ConnectionError"]
    assert done.attributes["taskq.outcome"] == "completed" and done.status.status_code is StatusCode.UNSET


def carried(inspector, task_id: str) -> list[str]:
    """The trace id and parent span id of the context the task carries in its headers."""
    return inspector.get_task(Q, task_id).headers["traceparent"].split("-")[1:3]


@pytest.mark.urls("tracing_views")
def test_a_views_request_through_enqueue_a_failed_attempt_and_its_retry(
    spans, make_server, registry, client, inspector, clock
):
    fails_once(registry)
    tracing_views.clients[:] = [client]
    instrumentor = DjangoInstrumentor()
    instrumentor.instrument()
    try:
        response = DjangoClient().post("/checkout/")
    finally:
        instrumentor.uninstrument()
        tracing_views.clients.clear()
    assert response.status_code == 200, response.content
    task_id = response.json()["task"]

    (request,) = [s for s in spans.get_finished_spans() if s.kind is SpanKind.SERVER]
    (send,) = ended(spans, f"send {Q}", 1)
    assert request.parent is None and request.attributes["http.route"] == "checkout/"
    assert send.kind is SpanKind.PRODUCER and send.parent.span_id == request.context.span_id
    assert send.context.trace_id == request.context.trace_id and send.attributes["messaging.message.id"] == task_id
    assert carried(inspector, task_id) == [f"{send.context.trace_id:032x}", f"{send.context.span_id:016x}"]
    check_attempts(spans, send, make_server, inspector, clock, task_id)


@pytest.mark.django_db
def test_an_api_publish_with_a_traceparent_through_a_failed_attempt_and_its_retry(
    spans, settings_redis, make_server, registry, inspector, clock
):
    fails_once(registry)
    handles.reset()  # the API's engine on this test's database
    secret = create_token("tracing", ["*"])[1]
    client_trace, client_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    response = DjangoClient().post(
        f"/api/v1/queues/{Q}/tasks",
        '{"type": "shop:receipt", "payload": {"order": 42}, "tries": 4}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        HTTP_TRACEPARENT=f"00-{client_trace}-{client_span}-01",
    )
    handles.reset()
    assert response.status_code == 201, response.content
    task_id = response.json()["id"]

    (send,) = ended(spans, f"send {Q}", 1)
    assert send.kind is SpanKind.PRODUCER and send.parent.is_remote
    assert (f"{send.parent.trace_id:032x}", f"{send.parent.span_id:016x}") == (client_trace, client_span)
    assert carried(inspector, task_id) == [client_trace, f"{send.context.span_id:016x}"]
    check_attempts(spans, send, make_server, inspector, clock, task_id)
