"""queues/engine/tracing.py: a context goes into a task's headers and comes back out of them; without a recording
span nothing is added."""

from __future__ import annotations

from opentelemetry import trace

from taskq.queues.engine import tracing


def test_without_a_current_span_headers_are_returned_unchanged(spans):
    headers = {"a": "b"}
    assert tracing.inject(headers) is headers
    assert tracing.extract(headers) is None and not tracing.recording()


def test_the_current_span_goes_into_the_headers_and_comes_back_as_the_parent(spans):
    with tracing.tracer().start_as_current_span("request") as span:
        assert tracing.recording()
        headers = tracing.inject({"mine": "kept", "tracestate": "vendor=1"})
    assert headers["mine"] == "kept" and headers["tracestate"] == "vendor=1"  # the caller's own win
    ids = span.get_span_context()
    assert headers["traceparent"].split("-")[1:3] == [f"{ids.trace_id:032x}", f"{ids.span_id:016x}"]

    parent = trace.get_current_span(tracing.extract(headers)).get_span_context()
    assert (parent.trace_id, parent.span_id, parent.is_remote) == (ids.trace_id, ids.span_id, True)
    assert [s.name for s in spans.get_finished_spans()] == ["request"]
