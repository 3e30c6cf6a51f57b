"""The consumer span of each attempt (the ``otel`` extra): ``process <queue>``, of kind CONSUMER, named and
attributed after OpenTelemetry's messaging semantic conventions, a child of the context the task's headers carry.

Its parent: the operator's context (``taskq-operator-traceparent``) when an operator's action (run, retry, edit,
cancel) caused this attempt, with a link to the producer's context (``traceparent``); otherwise the producer's
context; otherwise none (a trace of its own). The span is current while the handler runs, on its thread or in its
asyncio task (and, for ``--pool process``, its context goes to the child with the task), so the spans a handler
makes, the tasks it enqueues and its log lines join the attempt.

When it ends: when the attempt's outcome has been written, not when the handler returns. The outcome a worker
decides is only a proposal until the fenced acknowledgement takes it: a worker whose lease was taken over finds its
ack refused, and the span then says ``lease_lost``, not the ``completed`` or ``retry`` the handler's return
suggested. So the span covers the run and the write, and its outcome is the one Redis holds.

What it costs: where the extra is missing, or the API is there but no SDK is set up (the global tracer provider is
still the API's proxy), ``AttemptTracing.begin`` returns None after one check, and every other hook is skipped by an
``attempt.span is None`` test at its call site: no span object, no context attached. The check is a clock reading:
asking the API for its provider costs microseconds (it reads the environment each time), so without an SDK it is
asked again at most once a second, and an SDK an application sets up after the worker started is found within that.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from taskq.queues.engine import tracing
from taskq.queues.engine.operator_trace import OPERATOR_TRACEPARENT, OPERATOR_TRACESTATE
from taskq.queues.engine.redaction import NO_REDACTION, Redaction

from .attempt import Attempt, Outcome
from .attempt_span import AttemptSpan

try:  # optional: otel
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode
except ImportError:
    otel_context = trace = None  # type: ignore[assignment]

#: The headers an operator's action writes (its request's W3C context) -> the W3C name each stands for.
OPERATOR_HEADERS = {OPERATOR_TRACEPARENT: "traceparent", OPERATOR_TRACESTATE: "tracestate"}

#: Seconds between two looks for an SDK while there is none.
LOOK_AGAIN = 1.0

#: An outcome's kind -> the ``taskq.outcome`` a span records.
OUTCOMES = {
    "success": "completed",
    "retry": "retry",
    "archive": "archived",
    "requeue": "requeued",
}


def sdk_installed() -> bool:
    """Whether an application set up a tracer provider of its own (an SDK): the API's default is a proxy (or a
    no-op) that records nothing."""
    return tracing.available() and not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


def operator_context(headers: Mapping[str, str]) -> Any:
    """The operator's context in a task's headers (see ``OPERATOR_HEADERS``), or None when there is none."""
    if OPERATOR_TRACEPARENT not in headers:
        return None
    return tracing.extract({w3c: headers[name] for name, w3c in OPERATOR_HEADERS.items() if name in headers})


class AttemptTracing:
    """Begins and ends the spans of a worker's attempts. ``redaction`` masks a failure's message and traceback in
    the span as in Redis: a trace is read by people too."""

    def __init__(self, redaction: Redaction = NO_REDACTION) -> None:
        self.redaction = redaction
        self._tracer: Any = None  # taskq's tracer, once an SDK is there (a provider is set once per process)
        # When (monotonic) to look for an SDK again while there is none. Every thread that begins attempts reads and
        # writes it unguarded: a float store is whole, and a lost update costs one look more.
        self._next_look = 0.0

    def begin(self, attempt: Attempt) -> AttemptSpan | None:
        """The attempt's span, started now; None when nothing would record it."""
        if self._tracer is None:
            now = time.monotonic()
            if now < self._next_look:
                return None
            self._next_look = now + LOOK_AGAIN
            if not sdk_installed():
                return None
            self._tracer = tracing.tracer()
        headers = attempt.task.message.headers
        producer = tracing.extract(headers)
        operator = operator_context(headers)
        links = None
        if operator is not None and producer is not None:
            producer_span = trace.get_current_span(producer).get_span_context()
            links = [Link(producer_span)] if producer_span.is_valid else None
        # With no context in the headers the attempt starts a trace of its own: an empty context, not whatever
        # the thread that begins it has current.
        parent = operator or producer or otel_context.Context()
        span = self._tracer.start_span(
            f"process {attempt.queue}",
            context=parent,
            kind=SpanKind.CONSUMER,
            links=links,
            attributes={
                "messaging.system": "taskq",
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": attempt.queue,
                "messaging.message.id": attempt.id,
                "taskq.task.type": attempt.task.type,
                "taskq.attempt": attempt.task.retried + 1,
                "taskq.lease.token": attempt.token,
            },
        )
        return AttemptSpan(span, trace.set_span_in_context(span, parent))

    def decided(self, attempt: Attempt, outcome: Outcome, now: float) -> None:
        """Record the outcome the attempt ended with (``now``: the engine clock's time, which ``retry_at`` counts
        by). A failure records its exception, masked, and sets the status to ERROR."""
        traced = attempt.span
        if traced is None:
            return
        if outcome.kind == "drop":  # its lease was lost or ran out unextended: the worker stopped it
            traced.lease_lost("the worker stopped the attempt")
            return
        span = traced.span
        span.set_attribute("taskq.outcome", outcome.cause or OUTCOMES.get(outcome.kind, outcome.kind))
        if outcome.kind == "retry":
            span.set_attribute("taskq.retry.delay_s", max(0.0, outcome.retry_at - now))
        failed = outcome.kind in ("retry", "archive") and outcome.is_failure
        if outcome.exception is None and not failed:
            return
        masked = self._masked(attempt, outcome)
        if outcome.exception is not None:
            span.record_exception(outcome.exception, attributes=masked)
            outcome.exception = None  # recorded: its frames need not live until the outcome is written
        if failed:
            span.set_status(Status(StatusCode.ERROR, masked["exception.message"]))

    def _masked(self, attempt: Attempt, outcome: Outcome) -> dict[str, str]:
        """The exception's message and traceback as Redis stores them (masked by the worker's redaction)."""
        failure = outcome.failure
        if failure is None:
            return {"exception.message": outcome.error}
        failure = failure.redacted(self.redaction, attempt.task.type, attempt.task.message.payload)
        return {"exception.message": failure.message, "exception.stacktrace": failure.traceback}
