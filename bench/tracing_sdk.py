"""An OpenTelemetry SDK for a benchmarked worker (``taskq_bench process --tracing sdk``, which passes
``--import bench.tracing_sdk`` to the worker): a tracer provider whose spans go through a ``BatchSpanProcessor`` (as
in production) to an exporter that drops them, so a run measures what making, recording and batching the spans
costs the worker, without the cost of sending them anywhere. Importing it sets the process's provider.

The benchmark's tasks carry a producer's sampled context (``taskq_bench.TRACEPARENT``), as if each had been enqueued
inside a traced request, so every attempt's span is a child of a remote parent."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class DroppingExporter(SpanExporter):
    """Takes every batch and keeps nothing; counts the spans, for a look at whether they were made."""

    def __init__(self) -> None:
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(DroppingExporter()))
trace.set_tracer_provider(provider)
