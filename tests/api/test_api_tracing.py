"""The HTTP API and OpenTelemetry: a publish request's own ``traceparent`` / ``tracestate`` headers are the context
the task is enqueued in, so its producer span is their child and the task's headers carry the trace; a task whose
body sets ``headers.traceparent`` keeps it; a malformed ``traceparent`` is ignored (W3C), never an error."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind

pytestmark = pytest.mark.django_db

Q = "/api/v1/queues/default"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"


def publish(api, body: dict, **headers: str):
    response = api.client.post(
        f"{Q}/tasks", json.dumps(body), content_type="application/json", **api._headers(None), **headers
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def stored_headers(engine, task_id: str) -> dict[str, str]:
    raw = engine.hget(f"tq:{{default}}:t:{task_id}", "msg")
    return json.loads(raw).get("headers", {})


def test_the_request_traceparent_is_the_parent_of_the_producer_span(spans, api, engine):
    task_id = publish(api, {"type": "email", "payload": {}}, HTTP_TRACEPARENT=TRACEPARENT, HTTP_TRACESTATE="c=1")
    [send] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    assert send.name == "send default" and send.attributes["messaging.message.id"] == task_id
    assert (f"{send.parent.trace_id:032x}", f"{send.parent.span_id:016x}") == (CLIENT_TRACE, CLIENT_SPAN)
    assert send.parent.is_remote
    headers = stored_headers(engine, task_id)
    ids = send.get_span_context()
    assert headers["traceparent"][:-3] == f"00-{CLIENT_TRACE}-{ids.span_id:016x}"  # the task joins the trace
    assert headers["tracestate"] == "c=1"


def test_a_traceparent_in_the_body_headers_wins(spans, api, engine):
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    body = {"type": "email", "payload": {}, "headers": {"traceparent": own, "x": "y"}}
    task_id = publish(api, body, HTTP_TRACEPARENT=TRACEPARENT)
    assert stored_headers(engine, task_id) == {"traceparent": own, "x": "y"}


@pytest.mark.parametrize(
    "traceparent", ["nonsense", f"00-{CLIENT_TRACE}-{'0' * 16}-01", f"zz-{CLIENT_TRACE}-{CLIENT_SPAN}-01"]
)
def test_a_malformed_traceparent_is_ignored(spans, api, engine, traceparent):
    task_id = publish(api, {"type": "email", "payload": {}}, HTTP_TRACEPARENT=traceparent)
    assert "traceparent" not in stored_headers(engine, task_id)
    assert [s for s in spans.get_finished_spans() if s.kind == SpanKind.PRODUCER] == []


def test_without_a_traceparent_nothing_is_added(spans, api, engine):
    task_id = publish(api, {"type": "email", "payload": {}})
    assert stored_headers(engine, task_id) == {}


def test_the_openapi_document_names_the_trace_headers(api):
    document = api.client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/queues/{queue}/tasks", "/api/v1/queues/{queue}/deadletters/{task_id}/respawn"):
        params = document["paths"][path]["post"]["parameters"]
        assert {(p["name"], p["in"]) for p in params} >= {("traceparent", "header"), ("tracestate", "header")}
