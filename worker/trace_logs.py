"""Log lines that join a trace: a record made while a span is current (an attempt's span, in the handler's thread or
asyncio task; see worker/attempt_tracing.py) carries its ``trace_id`` and ``span_id``, as hex in W3C's spelling, and
the worker's log format shows them at the end of the line when they are there.

The ids are added by the log record factory, so every handler and formatter sees them, a JSON formatter too
(``%(trace_id)s`` in a format of your own needs a record made inside a span: use ``TraceFormatter`` for lines that
may be made outside one). Without the ``otel`` extra nothing is installed; with the API but no SDK no span is ever
valid, and a record costs one look at the current span.
"""

from __future__ import annotations

import logging
from typing import Any

from taskq.queues.engine import tracing

try:  # optional: otel
    from opentelemetry import trace
except ImportError:
    trace = None  # type: ignore[assignment]


class TraceFormatter(logging.Formatter):
    """A formatter that ends a line with ``trace_id=<32 hex> span_id=<16 hex>`` when its record carries them (the
    traceback of an exception, when there is one, follows as usual)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        trace_id = getattr(record, "trace_id", None)
        if trace_id is None:
            return line
        return f"{line} trace_id={trace_id} span_id={getattr(record, 'span_id', '')}"


class RecordsWithTraceIds:
    """A log record factory: records made by the one it wraps, with the current span's ids added when a span is
    current."""

    def __init__(self, make_record: Any) -> None:
        self._make_record = make_record

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self._make_record(*args, **kwargs)
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            record.trace_id = f"{span.trace_id:032x}"
            record.span_id = f"{span.span_id:016x}"
        return record


def record_trace_ids() -> None:
    """Make log records carry the current span's ids, once per process (nothing without the extra)."""
    if not tracing.available():
        return
    current = logging.getLogRecordFactory()
    if not isinstance(current, RecordsWithTraceIds):
        logging.setLogRecordFactory(RecordsWithTraceIds(current))


def show_trace_ids(logger: logging.Logger | None = None) -> None:
    """Records carry the ids, and the handlers of ``logger`` (the root logger by default) whose formatter is a
    plain ``logging.Formatter`` (the worker's own format, Django's default one) show them: their formatter becomes a
    ``TraceFormatter`` of the same format. A formatter of another class is the application's choice and is left."""
    if not tracing.available():
        return
    record_trace_ids()
    for handler in (logger or logging.getLogger()).handlers:
        plain = handler.formatter
        if plain is not None and type(plain) is logging.Formatter:
            showing = TraceFormatter()
            showing.__dict__.update(plain.__dict__)  # the same format, style and date format
            handler.setFormatter(showing)
