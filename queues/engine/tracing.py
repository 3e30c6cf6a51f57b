"""OpenTelemetry's trace context carried by a task (the ``otel`` extra): what a producer adds to the task's headers
and what a worker reads back from them, so that every attempt of the task joins the producer's trace.

The context travels as W3C Trace Context (``traceparent``, ``tracestate``), written by the application's configured
text-map propagator (W3C Trace Context and Baggage unless it set another). The extra brings only the OpenTelemetry
API: the application brings its SDK and exporter, as with any instrumentation library. Where the API is not
installed, nothing of OpenTelemetry is imported and each function here returns at its first line; where it is
installed but no SDK records, the current span is not valid and ``inject`` returns as soon as it has asked.

The spans themselves are made by the producer and the worker (their own modules); this module is the one place that
knows how a context is put into and taken out of a task.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

try:  # optional: otel
    from opentelemetry import propagate, trace
except ImportError:
    propagate = trace = None  # type: ignore[assignment]

#: The headers that carry a trace context (W3C Trace Context), which a task's headers may hold.
TRACE_HEADERS = ("traceparent", "tracestate")
#: The instrumentation scope of taskq's spans.
TRACER_NAME = "taskq"


def available() -> bool:
    """Whether the OpenTelemetry API is installed (the ``otel`` extra)."""
    return trace is not None


@cache
def tracer() -> Any:
    """taskq's tracer, from the application's tracer provider (a no-op tracer until the application sets one).
    Only called where ``available()``. Made once: an SDK builds a new tracer object per ``get_tracer`` call, and the
    one made before the application sets its provider is a proxy that follows it there."""
    return trace.get_tracer(TRACER_NAME)


def recording() -> bool:
    """Whether a valid span is current, that is, whether there is a context to carry (an SDK is recording)."""
    return trace is not None and trace.get_current_span().get_span_context().is_valid


def inject(headers: dict[str, str], context: Any = None) -> dict[str, str]:
    """``headers`` with the trace context (the current one, or ``context``) added: a new dict when there is one
    to add, else ``headers`` itself. Headers the caller set are kept, so a producer may forward a context of its
    own."""
    if trace is None or (context is None and not recording()):
        return headers
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    if not carrier:
        return headers
    return {**carrier, **headers}


def extract(headers: Mapping[str, str]) -> Any:
    """The trace context in a task's headers, or None when they carry none (or the extra is not installed)."""
    if trace is None or "traceparent" not in headers:
        return None
    return propagate.extract(headers)
