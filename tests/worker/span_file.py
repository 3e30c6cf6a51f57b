"""An OpenTelemetry SDK for worker processes the tests start (``manage.py taskworker``, its handler processes): the
spans each process ends go, one JSON object a line, to a file of its own in a folder the test names, and the test
reads them all back (``read_spans``). A subprocess cannot reach the test's in-memory exporter; a file it can."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    """Writes each span as one line of JSON to ``<folder>/spans-<pid>.jsonl`` (a forked child writes its own)."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with (self.folder / f"spans-{os.getpid()}.jsonl").open("a") as out:
            for span in spans:
                out.write(json.dumps(as_dict(span)) + "\n")
        return SpanExportResult.SUCCESS


def as_dict(span: ReadableSpan) -> dict[str, Any]:
    context, parent = span.get_span_context(), span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": f"{parent.span_id:016x}" if parent is not None else None,
        "attributes": dict(span.attributes or {}),
        "links": [f"{link.context.span_id:016x}" for link in span.links],
        "status": span.status.status_code.name,
        "pid": os.getpid(),
    }


def export_to(folder: str) -> None:
    """Set this process's tracer provider: its spans go to ``folder``."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(folder)))
    trace.set_tracer_provider(provider)


def read_spans(folder: Path) -> list[dict[str, Any]]:
    """Every span the processes wrote to ``folder`` so far."""
    return [json.loads(line) for path in sorted(folder.glob("spans-*.jsonl")) for line in path.read_text().splitlines()]
