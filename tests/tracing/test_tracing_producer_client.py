"""The producer's spans and the context its tasks carry, through ``Client`` on a real Redis: one ``send`` span per
enqueue (a child of the caller's span, its context in the task's headers, the task as stored in Redis carrying
it), one per ``enqueue_many`` call linking a ``create`` context per task, a failed enqueue's span, the caller's
own headers winning, and nothing added outside a span."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from taskq.queues.engine import Client, DuplicateTaskError, RedisUnavailableError, ValidationError, tracing

FORWARDED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def client(r, redis_url, clock):
    with Client(redis_url, clock=clock, policies=False) as c:
        yield c


def ids_of(span_or_context) -> list[str]:
    """The trace and span ids of a span (or a span context), as a ``traceparent`` writes them."""
    ids = getattr(span_or_context, "get_span_context", lambda: span_or_context)()
    return [f"{ids.trace_id:032x}", f"{ids.span_id:016x}"]


def carried_ids(headers) -> list[str]:
    return headers["traceparent"].split("-")[1:3]


def finished(spans, name):
    return [s for s in spans.get_finished_spans() if s.name == name]


def stored_headers(inspector, queue, task_id):
    return inspector.get_task(queue, task_id).headers


def test_an_enqueue_is_a_send_span_under_the_callers_span_whose_context_the_task_carries(spans, client, inspector):
    with tracing.tracer().start_as_current_span("request") as request:
        info = client.enqueue("email:deliver", {"to": "ada"}, queue="mail", headers={"mine": "kept"})

    [send] = finished(spans, "send mail")
    assert send.kind == SpanKind.PRODUCER
    assert send.parent.span_id == request.get_span_context().span_id
    assert send.context.trace_id == request.get_span_context().trace_id
    assert dict(send.attributes) == {
        "messaging.system": "taskq",
        "messaging.operation.type": "send",
        "messaging.destination.name": "mail",
        "taskq.task.type": "email:deliver",
        "messaging.message.id": info.id,
    }
    stored = stored_headers(inspector, "mail", info.id)
    assert carried_ids(stored) == ids_of(send) and stored["mine"] == "kept"
    assert info.headers == stored


def test_a_context_the_caller_put_in_the_headers_wins(spans, client, inspector):
    with tracing.tracer().start_as_current_span("request"):
        info = client.enqueue("email:deliver", headers={"traceparent": FORWARDED, "tracestate": "vendor=1"})
    assert stored_headers(inspector, "default", info.id) == {"traceparent": FORWARDED, "tracestate": "vendor=1"}
    assert len(finished(spans, "send default")) == 1  # the send is still recorded


def test_outside_a_span_nothing_is_added_and_no_span_is_made(spans, client, inspector):
    info = client.enqueue("email:deliver", headers={"mine": "kept"})
    many = client.enqueue_many([("a", 1), ("b", 2)])
    assert stored_headers(inspector, "default", info.id) == {"mine": "kept"}
    assert [stored_headers(inspector, "default", i.id) for i in many] == [{}, {}]
    assert spans.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("enqueue", "error"),
    [
        (lambda c: c.enqueue("email", queue=42), ValidationError),
        (lambda c: c.enqueue("email", headers="not a dict"), ValidationError),
        (lambda c: c.enqueue("email", {"to": "ada"}, unique=60), DuplicateTaskError),
    ],
    ids=["bad queue", "bad headers", "unique conflict"],
)
def test_a_failed_enqueue_records_its_exception_and_the_error_status(spans, client, r, enqueue, error):
    client.enqueue("email", {"to": "ada"}, unique=60)  # the lock the third case runs into
    before = sorted(r.keys())
    with tracing.tracer().start_as_current_span("request"), pytest.raises(error):
        enqueue(client)
    assert sorted(r.keys()) == before  # nothing written
    [send] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    assert send.status.status_code == StatusCode.ERROR
    assert send.attributes["error.type"] == error.__qualname__
    [event] = send.events
    assert event.name == "exception" and event.attributes["exception.type"].endswith(error.__name__)


def test_a_redis_that_is_down_fails_the_send_span(spans, clock):
    with Client("redis://127.0.0.1:1/3", clock=clock, policies=False) as down:
        with tracing.tracer().start_as_current_span("request"), pytest.raises(RedisUnavailableError):
            down.enqueue("email")
    [send] = finished(spans, "send default")
    assert send.status.status_code == StatusCode.ERROR and send.events[0].name == "exception"


def test_enqueue_many_is_one_send_span_linking_a_creation_context_per_task(spans, client, inspector):
    items = [
        ("a", 1),
        {"type": "b", "payload": 2, "headers": {"own": "x"}},
        {"type": "c", "headers": {"traceparent": FORWARDED}},
    ]
    with tracing.tracer().start_as_current_span("request") as request:
        infos = client.enqueue_many(items, queue="bulk", headers={"shared": "y"})

    [send] = finished(spans, "send bulk")
    creates = finished(spans, "create bulk")
    assert send.kind == SpanKind.PRODUCER and send.parent.span_id == request.get_span_context().span_id
    assert send.attributes["messaging.batch.message_count"] == 3
    assert send.attributes["messaging.operation.type"] == "send"
    # The two tasks without a context of their own each got a create span, a child of the request.
    assert [c.attributes["messaging.message.id"] for c in creates] == [infos[0].id, infos[1].id]
    assert all(c.kind == SpanKind.PRODUCER and c.parent.span_id == request.get_span_context().span_id for c in creates)
    assert all(c.attributes["messaging.operation.type"] == "create" for c in creates)
    headers = [stored_headers(inspector, "bulk", info.id) for info in infos]
    assert [carried_ids(h) for h in headers] == [
        ids_of(creates[0]),
        ids_of(creates[1]),
        carried_ids({"traceparent": FORWARDED}),
    ]
    # As without tracing, an item's own headers replace the call's shared ones.
    assert headers[0]["shared"] == "y" and headers[1]["own"] == "x" and "shared" not in headers[1]
    # The send span links every task's creation context, the forwarded one included.
    assert [ids_of(link.context) for link in send.links] == [carried_ids(h) for h in headers]


def test_enqueue_many_over_several_queues_names_no_one_queue(spans, client):
    with tracing.tracer().start_as_current_span("request"):
        client.enqueue_many([{"type": "a", "queue": "q1"}, {"type": "b", "queue": "q2"}])
    [send] = finished(spans, "send")
    assert "messaging.destination.name" not in send.attributes
    assert sorted(s.name for s in spans.get_finished_spans() if s.name.startswith("create")) == [
        "create q1",
        "create q2",
    ]


def test_a_refused_enqueue_many_ends_its_spans_and_fails_the_send(spans, client, r):
    with tracing.tracer().start_as_current_span("request"), pytest.raises(ValidationError):
        client.enqueue_many([("a", 1), ("", 2)])
    [send] = finished(spans, "send default")
    assert send.status.status_code == StatusCode.ERROR
    assert len(finished(spans, "create default")) == 2 and r.keys() == []


def test_a_sampled_out_caller_passes_its_decision_on(spans, client, inspector):
    """A caller whose trace is not sampled: the task carries the context, flagged not sampled, and nothing is
    exported."""
    parent = trace.NonRecordingSpan(
        trace.SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=True)
    )
    with trace.use_span(parent):
        info = client.enqueue("email")
    traceparent = stored_headers(inspector, "default", info.id)["traceparent"]
    assert traceparent.startswith("00-0af7651916cd43dd8448eb211c80319c-") and traceparent.endswith("-00")
    assert spans.get_finished_spans() == ()
