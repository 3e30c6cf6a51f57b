"""One trace from a Django view's request to the task's last attempt, as an application sees it: the view traced by
OpenTelemetry's own Django instrumentation, the task enqueued by the real client inside it (the producer's ``send``
span), a first attempt that fails and its retry that completes, each a ``process`` span under the ``send`` span,
every span in the request's trace and every parent exact."""

from __future__ import annotations

import pytest
import tracing_views
from django.test import Client as DjangoClient
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.trace import SpanKind, StatusCode
from worker_support import state_of, wait_for

from taskq.queues.engine import Task, handler

Q = "default"


def ended(spans, name: str, count: int) -> list:
    """The ended spans named ``name``, oldest first, once there are ``count`` of them."""

    def found() -> list | None:
        named = [s for s in spans.get_finished_spans() if s.name == name]
        return sorted(named, key=lambda s: s.start_time) if len(named) >= count else None

    return wait_for(found, what=f"{count} span(s) {name!r}")


@pytest.mark.urls("tracing_views")
def test_a_views_request_through_enqueue_a_failed_attempt_and_its_retry(
    spans, make_server, registry, client, inspector, clock
):
    @handler("shop:receipt", registry=registry, retry_delay=lambda *_: 5.0)
    def receipt(task: Task) -> None:
        if task.retried == 0:
            raise ConnectionError("SMTP 451: try later")

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

    make_server()
    wait_for(lambda: state_of(inspector, Q, task_id) == "retry", what="the first attempt's failure")
    clock.advance(6)
    wait_for(lambda: state_of(inspector, Q, task_id) == "completed", what="the retry's success")

    (request,) = [s for s in spans.get_finished_spans() if s.kind is SpanKind.SERVER]
    (send,) = ended(spans, f"send {Q}", 1)
    failed, done = ended(spans, f"process {Q}", 2)
    trace_id = request.context.trace_id
    assert {s.context.trace_id for s in (send, failed, done)} == {trace_id}
    assert request.parent is None and request.attributes["http.route"] == "checkout/"
    assert send.kind is SpanKind.PRODUCER and send.parent.span_id == request.context.span_id
    assert send.attributes["messaging.message.id"] == task_id
    for span, number in ((failed, 1), (done, 2)):
        assert span.kind is SpanKind.CONSUMER and span.parent.span_id == send.context.span_id
        assert (span.attributes["messaging.message.id"], span.attributes["taskq.attempt"]) == (task_id, number)
    assert failed.attributes["taskq.outcome"] == "retry" and failed.status.status_code is StatusCode.ERROR
    assert [e.attributes["exception.type"] for e in failed.events] == ["ConnectionError"]
    assert done.attributes["taskq.outcome"] == "completed" and done.status.status_code is StatusCode.UNSET
    assert inspector.get_task(Q, task_id).headers["traceparent"].split("-")[1] == f"{trace_id:032x}"
