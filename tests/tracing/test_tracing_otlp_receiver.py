"""Spans reach a real OTLP receiver: Jaeger v2, built from the Go module proxy (scripts/ensure-otel-receiver.sh),
takes them over OTLP/HTTP from two processes and gives the one trace back through its query API.

A real worker process (``taskworker``) runs a handler module that sets up the SDK with the OTLP/HTTP exporter, as an
application would; the test process is the producer, exporting to the same receiver. The task fails its first
attempt and completes its second. What arrives must be one trace with its parent links exact.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from opentelemetry.trace import SpanKind, StatusCode

from taskq.queues.engine import Client, tracing
from tests.tracing.otlp_receiver import Receiver, attributes, exporting_to, running_receiver
from tests.waiting import wait_for
from tests.worker.worker_support import start_taskworker

QUEUE = "otlp"
# tests.tracing.otlp_tasks's (not imported: it would set this process's tracer provider and register its handler).
TASK = "test:otlp-flaky"
SERVICE = "taskq-worker"
#: How long spans have to reach the receiver: the worker's batch processor sends every 100 ms here.
ARRIVAL = 60.0


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    with running_receiver(tmp_path_factory.mktemp("jaeger")) as running:
        yield running


def start_worker(processes: list[subprocess.Popen[bytes]], redis_url: str, receiver: Receiver, log: Path) -> None:
    start_taskworker(
        processes,
        redis_url,
        log,
        "--queues",
        QUEUE,
        "--concurrency",
        "2",
        "--import",
        "tests.tracing.otlp_tasks",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.otlp_traces_url,
        OTEL_BSP_SCHEDULE_DELAY="100",
    )


def by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The spans under each name, in the order they started."""
    named: dict[str, list[dict[str, Any]]] = {}
    for span in sorted(spans, key=lambda span: int(span["startTimeUnixNano"])):
        named.setdefault(span["name"], []).append(span)
    return named


@pytest.mark.timeout(180)  # Jaeger's start (up to a minute on a loaded machine) counts, then the spans' arrival
def test_a_task_that_fails_once_arrives_in_jaeger_as_one_trace(
    receiver: Receiver, redis_client: redis.Redis, redis_url: str, processes: list[Any], tmp_path: Path, spans: Any
) -> None:
    start_worker(processes, redis_url, receiver, tmp_path / "worker.log")
    with exporting_to(receiver), Client(redis_url) as client:
        with tracing.tracer().start_as_current_span("POST /checkout", kind=SpanKind.SERVER) as request:
            task = client.enqueue(TASK, queue=QUEUE)
    ids = request.get_span_context()
    trace_id, request_id = f"{ids.trace_id:032x}", f"{ids.span_id:016x}"

    def both_attempts() -> dict[str, list[dict[str, Any]]]:
        named = by_name(receiver.spans(trace_id))
        return named if len(named.get(f"process {QUEUE}", [])) == 2 else {}

    named = wait_for(both_attempts, timeout=ARRIVAL, interval=0.2, what=f"both attempts in Jaeger ({tmp_path})")
    assert sorted(named) == sorted(["POST /checkout", f"send {QUEUE}", f"process {QUEUE}", f"handle {task.id}"])
    assert all(span["traceId"] == trace_id for spans_of_name in named.values() for span in spans_of_name)

    (root,) = named["POST /checkout"]
    assert root["spanId"] == request_id and not root.get("parentSpanId")
    (send,) = named[f"send {QUEUE}"]
    assert (send["parentSpanId"], kind(send), send["service"]) == (request_id, "PRODUCER", root["service"])
    assert attributes(send)["messaging.message.id"] == task.id

    first, second = named[f"process {QUEUE}"]
    for number, attempt in enumerate((first, second), start=1):
        assert (attempt["parentSpanId"], kind(attempt), attempt["service"]) == (send["spanId"], "CONSUMER", SERVICE)
        described = attributes(attempt)
        assert (described["messaging.system"], described["messaging.destination.name"]) == ("taskq", QUEUE)
        assert (described["messaging.message.id"], int(described["taskq.attempt"])) == (task.id, number)
    assert attributes(first)["taskq.outcome"] == "retry" and "taskq.retry.delay_s" in attributes(first)
    assert status(first) == "ERROR"
    assert [event["name"] for event in first["events"]] == ["exception"]
    assert attributes(second)["taskq.outcome"] == "completed"
    assert status(second) != "ERROR" and not second.get("events")

    # The handler's own spans are children of their attempt's.
    assert [span["parentSpanId"] for span in named[f"handle {task.id}"]] == [first["spanId"], second["spanId"]]


def kind(span: dict[str, Any]) -> str:
    """A span's kind as OTLP JSON writes it (``SPAN_KIND_CONSUMER`` or its number), by name."""
    value = span.get("kind", 0)
    return SpanKind(int(value) - 1).name if str(value).isdigit() else str(value).removeprefix("SPAN_KIND_")


def status(span: dict[str, Any]) -> str:
    """A span's status code as OTLP JSON writes it (``STATUS_CODE_ERROR`` or its number), by name."""
    code = span.get("status", {}).get("code", 0)
    return StatusCode(int(code)).name if str(code).isdigit() else str(code).removeprefix("STATUS_CODE_")
