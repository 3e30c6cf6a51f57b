"""The worker's span per attempt (worker/attempt_tracing.py), in a worker of this process on each pool that runs
handlers here (threads, asyncio): one trace from a span the test makes, through the enqueue, a failed attempt and
its retry to the completed attempt, with every parent exact; an operator's context as the parent with a link to the
producer's; the handler's own spans and log lines inside the attempt's span.

The producer's context goes into the task's headers with ``tracing.inject`` inside the test's span, as a producer
does (a client that injects it itself keeps headers a caller set, so the test holds either way)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from worker_support import POOLS, state_of, wait_for

from taskq.queues.engine import Task, handler, tracing
from taskq.worker.trace_logs import TraceFormatter, show_trace_ids

Q = "default"


@pytest.fixture(params=POOLS)
def worker_pool(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def finished(spans, name: str, count: int = 1) -> list:
    """The ended spans named ``name``, once there are ``count`` of them (they end as the acker writes)."""

    def ended() -> list | None:
        found = [s for s in spans.get_finished_spans() if s.name == name]
        return found if len(found) >= count else None

    return wait_for(ended, what=f"{count} span(s) {name!r}")


def attempts_of(spans, count: int) -> list:
    """The ``process`` spans, in the order of their attempts, once ``count`` have ended."""
    return sorted(finished(spans, f"process {Q}", count), key=lambda s: s.attributes["taskq.attempt"])


def flaky(registry, kind: str, fail_first: int = 1):
    """A handler (``kind``: "sync", or "async" for a coroutine) that fails its first ``fail_first`` attempts and
    makes a span of its own in each."""
    runs: list[int] = []

    def body(task: Task) -> None:
        runs.append(task.retried)
        with tracing.tracer().start_as_current_span("handler work"):
            logging.getLogger("test.handler").info("handling %s", task.id)
            if task.retried < fail_first:
                raise ValueError("not yet")

    if kind == "async":

        @handler("trace:flaky", registry=registry, retry_delay=lambda *_: 5.0)
        async def flaky_async(task: Task) -> None:
            await asyncio.sleep(0)
            body(task)

    else:
        handler("trace:flaky", registry=registry, retry_delay=lambda *_: 5.0)(body)
    return runs


def natural(worker_pool: str) -> str:
    """The kind of handler a pool is made for: coroutines on the asyncio pool, sync functions on threads."""
    return "async" if worker_pool == "asyncio" else "sync"


#: Each pool runs both kinds: the thread pool runs coroutines on its event loop, the asyncio pool sync functions on
#: its threads.
BOTH_KINDS = pytest.mark.parametrize("kind", ["sync", "async"])


@BOTH_KINDS
def test_one_trace_from_the_request_through_a_failure_and_its_retry(
    spans, make_server, registry, client, inspector, clock, worker_pool, kind
):
    flaky(registry, kind)
    with tracing.tracer().start_as_current_span("request") as request:
        info = client.enqueue("trace:flaky", b"", headers=tracing.inject({}), max_retry=3)
    make_server()
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="the first attempt's failure")
    clock.advance(6)
    wait_for(lambda: state_of(inspector, Q, info.id) in ("completed", None), what="the retry's success")
    failed, done = attempts_of(spans, 2)

    trace_id = request.get_span_context().trace_id
    for span, number in ((failed, 1), (done, 2)):
        assert span.kind is SpanKind.CONSUMER and span.context.trace_id == trace_id
        assert span.parent.span_id == request.get_span_context().span_id  # each attempt: a child of the producer's
        attributes = span.attributes
        assert attributes["messaging.system"] == "taskq" and attributes["messaging.operation.type"] == "process"
        assert attributes["messaging.destination.name"] == Q and attributes["messaging.message.id"] == info.id
        assert (attributes["taskq.task.type"], attributes["taskq.attempt"]) == ("trace:flaky", number)
        assert attributes["taskq.lease.token"]
    assert failed.attributes["taskq.outcome"] == "retry" and failed.attributes["taskq.retry.delay_s"] == 5.0
    assert failed.status.status_code is StatusCode.ERROR
    (event,) = failed.events
    assert event.name == "exception" and event.attributes["exception.message"] == "not yet"
    assert event.attributes["exception.type"] == "ValueError"
    assert "raise ValueError" in event.attributes["exception.stacktrace"]
    assert done.attributes["taskq.outcome"] == "completed" and done.status.status_code is StatusCode.UNSET
    assert "taskq.retry.delay_s" not in done.attributes and not done.events

    # The handler's own spans are children of their attempt's span.
    work = sorted(finished(spans, "handler work", 2), key=lambda s: s.start_time)
    assert [w.parent.span_id for w in work] == [failed.context.span_id, done.context.span_id]
    assert {w.context.trace_id for w in work} == {trace_id}


def test_an_operators_context_is_the_parent_and_the_producers_a_link(spans, make_server, registry, client, worker_pool):
    flaky(registry, natural(worker_pool), fail_first=0)
    with tracing.tracer().start_as_current_span("request") as request:
        headers = tracing.inject({})
    with tracing.tracer().start_as_current_span("operator's retry") as operator:
        action = tracing.inject({})
    headers["taskq-operator-traceparent"] = action["traceparent"]
    client.enqueue("trace:flaky", b"", headers=headers)
    make_server()
    (attempt,) = attempts_of(spans, 1)
    assert attempt.context.trace_id == operator.get_span_context().trace_id != request.get_span_context().trace_id
    assert attempt.parent.span_id == operator.get_span_context().span_id
    (link,) = attempt.links
    assert (link.context.trace_id, link.context.span_id) == (
        request.get_span_context().trace_id,
        request.get_span_context().span_id,
    )


def test_without_a_context_in_its_headers_an_attempt_starts_a_trace_of_its_own(spans, make_server, registry, client):
    flaky(registry, "sync", fail_first=0)
    client.enqueue("trace:flaky", b"")  # outside any span: the producer adds no context to its headers
    with tracing.tracer().start_as_current_span("unrelated"):  # current where the worker starts, never its parent
        make_server()
        (attempt,) = attempts_of(spans, 1)
    assert attempt.parent is None and not attempt.links


@BOTH_KINDS
def test_log_lines_of_an_attempt_carry_its_trace_and_span_ids(
    spans, make_server, registry, client, caplog, worker_pool, kind
):
    flaky(registry, kind)
    caplog.set_level(logging.INFO)
    client.enqueue("trace:flaky", b"", max_retry=0)
    make_server()
    (attempt,) = attempts_of(spans, 1)
    (work,) = finished(spans, "handler work")
    handler_line = next(r for r in caplog.records if r.name == "test.handler")
    failure_line = next(r for r in caplog.records if r.getMessage().endswith("failed: ValueError: not yet"))
    trace_id = f"{attempt.context.trace_id:032x}"
    # The handler's line, inside its own span; the worker's line about the failure, inside the attempt's span.
    assert (handler_line.trace_id, handler_line.span_id) == (trace_id, f"{work.context.span_id:016x}")
    assert (failure_line.trace_id, failure_line.span_id) == (trace_id, f"{attempt.context.span_id:016x}")
    outside = [r for r in caplog.records if r.name == "worker"]  # the server's own lines: outside any attempt
    assert outside and not any(hasattr(r, "trace_id") for r in outside)


def test_the_worker_format_ends_a_line_with_the_ids_when_the_record_has_them():
    plain = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    handler_ = logging.StreamHandler()
    handler_.setFormatter(plain)
    logger = logging.getLogger("test.trace_logs")
    logger.addHandler(handler_)
    try:
        show_trace_ids(logger)
        showing = handler_.formatter
    finally:
        logger.removeHandler(handler_)
    assert isinstance(showing, TraceFormatter)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello %s", ("you",), None)
    assert showing.format(record) == "INFO x: hello you"
    record.trace_id, record.span_id = "a" * 32, "b" * 16
    assert showing.format(record) == f"INFO x: hello you trace_id={'a' * 32} span_id={'b' * 16}"
