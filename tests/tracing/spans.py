"""The OpenTelemetry SDK of the tracing tests: one tracer provider for the test process, with an in-memory
exporter behind a simple (synchronous) span processor, so a span is readable as soon as it has ended.

OpenTelemetry lets a process set its global tracer provider once, so the provider is made on first use and kept;
each test gets the exporter cleared (the ``spans`` fixture of tests/conftest.py).
"""

from __future__ import annotations

from functools import cache

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@cache
def process_exporter() -> InMemorySpanExporter:
    """The exporter of this process's tracer provider, which it sets as the global one the first time."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter
