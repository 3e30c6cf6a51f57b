"""The trace context of an HTTP request, current while the request's view runs: what an operator's action on a
task records (``engine/operator_trace.py``) and what a task enqueued by the HTTP API carries in its headers.

Where a Django OpenTelemetry instrumentation made a server span current, that span is the request's context and
nothing is done. Without one, the request's own W3C headers (``traceparent``, ``tracestate``) are made current,
so a client that sends them joins its trace all the same. A malformed ``traceparent`` is ignored, as W3C Trace
Context says: the view runs with no context, never an error. Without the ``otel`` extra nothing is imported and
the view runs as it would.

The console's actions (``console/access.py``), the admin's task actions (``task_admin.py``) and every HTTP API
endpoint (``api/http.py``) run inside ``request_context``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.http import HttpRequest

from .engine import tracing

try:  # optional: otel
    from opentelemetry import context as otel_context
    from opentelemetry import trace
except ImportError:
    otel_context = trace = None  # type: ignore[assignment]


def incoming_context(request: HttpRequest) -> Any:
    """The context the request's own ``traceparent`` / ``tracestate`` headers carry; None when a span is current
    already (an instrumentation's), when they carry none or a malformed one, or without the extra."""
    traceparent = request.META.get("HTTP_TRACEPARENT")  # META first: a request without one costs a dict lookup
    if not traceparent or not tracing.available() or tracing.recording():
        return None
    headers = {"traceparent": traceparent}
    if request.META.get("HTTP_TRACESTATE"):
        headers["tracestate"] = request.META["HTTP_TRACESTATE"]
    context = tracing.extract(headers)
    if context is None or not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


@contextmanager
def request_context(request: HttpRequest) -> Iterator[None]:
    """Run the block with the request's trace context current (see the module)."""
    context = incoming_context(request)
    if context is None:
        yield
        return
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)
