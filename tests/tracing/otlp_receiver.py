"""A real OTLP receiver for the tracing tests: Jaeger v2 (scripts/ensure-otel-receiver.sh builds it from the Go module
proxy and prints where), started on loopback ports of its own, taking spans over OTLP/HTTP and giving a trace back
through its query API.

The test process's tracer provider is the one of tests/tracing/spans.py (OpenTelemetry sets a process's provider
once), so spans reach the receiver through ``exporting_to``: a span processor added to that provider once, which
forwards ended spans to an OTLP exporter only while a test holds it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.ports import free_port, given_ports
from tests.tracing.spans import process_exporter
from tests.waiting import wait_for
from tests.worker.worker_support import kill_process

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("receiver") / "jaeger.yaml"
#: What builds the receiver and exports its path (``TASKQ_OTEL_RECEIVER``).
ENSURE = 'eval "$(bash scripts/ensure-otel-receiver.sh)"'
#: Seconds a started receiver has to answer (the first start of a fresh binary reads it from disk).
START_TIMEOUT = 60.0


def receiver_binary() -> Path:
    """The Jaeger binary named by ``TASKQ_OTEL_RECEIVER``. Without one the test is skipped on a developer's machine
    and fails under CI, which must run it (`make test` builds the receiver first)."""
    named = os.environ.get("TASKQ_OTEL_RECEIVER", "")
    if named and Path(named).is_file():
        return Path(named)
    missing = f"no OTLP receiver: TASKQ_OTEL_RECEIVER is {named or 'not set'!r}"
    if os.environ.get("CI"):
        pytest.fail(f"{missing}; CI must run the OTLP test: `{ENSURE}` before the suite (make test does)")
    pytest.skip(f"{missing}; `{ENSURE}` builds it (a few minutes, once)")


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports: free ones of ``$TASKQ_TEST_PORTS`` when set (a developer's own range on a
    shared machine), else ones the kernel picks (held open together, so they differ)."""
    given = given_ports()
    if given is not None:
        ports: list[int] = []
        for _ in range(count):
            ports.append(free_port(range(ports[-1] + 1 if ports else given.start, given.stop)))
        return ports
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Receiver:
    """A running Jaeger: where to send spans, and how to read a trace back."""

    #: OTLP/HTTP's traces endpoint (what ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` takes).
    otlp_traces_url: str
    #: The query API's and the UI's base URL.
    ui_url: str
    log: Path

    def get(self, path: str) -> Any:
        """The JSON of the query API at ``path``, or None while it answers 404 (a trace not yet stored)."""
        try:
            with urllib.request.urlopen(f"{self.ui_url}{path}", timeout=10) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        """Every span of the trace as stored (OTLP JSON, query API v3), each with its ``service`` added: [] while
        the receiver has none."""
        found = self.get(f"/api/v3/traces/{trace_id}")
        if not found:
            return []
        spans = []
        for resource_spans in found["result"]["resourceSpans"]:
            resource = attributes(resource_spans["resource"])
            for scope_spans in resource_spans["scopeSpans"]:
                spans += [{**span, "service": resource.get("service.name")} for span in scope_spans["spans"]]
        return spans


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    """An OTLP JSON item's attributes as a plain dict (each value unwrapped from its typed field)."""
    return {a["key"]: next(iter(a["value"].values()), None) for a in item.get("attributes", [])}


@contextmanager
def running_receiver(log_dir: Path) -> Iterator[Receiver]:
    """Jaeger, started on free loopback ports and confirmed up (its query API answers); stopped at the end."""
    binary = receiver_binary()
    otlp, query, query_grpc, health = free_ports(4)
    env = {
        **os.environ,
        "TASKQ_OTLP_HTTP_PORT": str(otlp),
        "TASKQ_JAEGER_QUERY_PORT": str(query),
        "TASKQ_JAEGER_QUERY_GRPC_PORT": str(query_grpc),
        "TASKQ_JAEGER_HEALTH_PORT": str(health),
    }
    log = log_dir / "jaeger.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(binary), "--config", str(CONFIG)], env=env, stdout=out, stderr=subprocess.STDOUT)
    receiver = Receiver(f"http://127.0.0.1:{otlp}/v1/traces", f"http://127.0.0.1:{query}", log)
    try:
        wait_for(lambda: up(receiver, proc), timeout=START_TIMEOUT, interval=0.2, what=f"Jaeger up ({log})")
        yield receiver
    finally:
        kill_process(proc, term_timeout=15)


def up(receiver: Receiver, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        pytest.fail(f"Jaeger exited with {proc.returncode}:\n{receiver.log.read_text(errors='replace')[-3000:]}")
    try:
        return receiver.get("/api/services") is not None
    except OSError:
        return False


class Forwarding(SpanProcessor):
    """Hands each ended span to the processor set by ``exporting_to``, if any (a provider cannot drop a processor
    once added, so this one is added once and switched)."""

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def on_end(self, span: ReadableSpan) -> None:
        if self.target is not None:
            self.target.on_end(span)


@cache
def forwarding() -> Forwarding:
    process_exporter()  # the process's provider, set on first use
    processor = Forwarding()
    trace.get_tracer_provider().add_span_processor(processor)  # type: ignore[attr-defined]
    return processor


@contextmanager
def exporting_to(receiver: Receiver) -> Iterator[None]:
    """Spans of this process that end inside the block are also sent to ``receiver`` over OTLP/HTTP (each as it
    ends), and the exporter is shut down after."""
    processor = SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.otlp_traces_url, timeout=10))
    forwarding().target = processor
    try:
        yield
    finally:
        forwarding().target = None
        processor.shutdown()
