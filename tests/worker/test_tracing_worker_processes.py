"""The attempt's span in worker processes the test starts (``manage.py taskworker``): with ``--pool process`` the
span is made in the worker process and its context goes to the handler process, whose own spans and log lines
join it; with ``--processes 2`` each worker process traces its own attempts.

A subprocess cannot reach this process's in-memory exporter: the handler module they import
(tests/worker/traced_tasks.py) sets up an SDK that writes every span to a file of its process
(tests/worker/span_file.py), which the test reads back."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from span_file import read_spans
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import Client, Inspector, tracing

Q = "default"


def traced_worker(processes: list[subprocess.Popen], redis_url: str, folder: Path, *args: str) -> subprocess.Popen:
    return start_taskworker(
        processes,
        redis_url,
        folder / "worker.log",
        "--queues",
        Q,
        "--import",
        "tests.worker.traced_tasks",
        *args,
        TASKQ_TEST_SPANS=str(folder),
    )


def enqueue_traced(client: Client, payload: bytes = b"") -> tuple[str, object]:
    """A task enqueued inside a span of this process; returns its id and that span's context."""
    with tracing.tracer().start_as_current_span("request") as request:
        info = client.enqueue("traced:work", payload, headers=tracing.inject({}), queue=Q)
    return info.id, request.get_span_context()


def spans_named(folder: Path, name: str, count: int) -> list[dict]:
    def written() -> list[dict] | None:
        found = [s for s in read_spans(folder) if s["name"] == name]
        return found if len(found) >= count else None

    return wait_for(written, timeout=60, what=f"{count} span(s) {name!r} in {folder}")


@pytest.mark.slow
def test_a_handler_process_makes_its_spans_and_logs_inside_the_attempt_span(
    spans, processes, redis_url: str, client: Client, tmp_path: Path
):
    worker = traced_worker(processes, redis_url, tmp_path, "--pool", "process", "--concurrency", "1")
    task_id, request = enqueue_traced(client)
    (attempt,) = spans_named(tmp_path, f"process {Q}", 1)
    (work,) = spans_named(tmp_path, "handler work", 1)

    assert attempt["pid"] == worker.pid and attempt["kind"] == "CONSUMER"
    assert attempt["attributes"]["messaging.message.id"] == task_id
    assert attempt["attributes"]["taskq.outcome"] == "completed"
    assert (attempt["trace_id"], attempt["parent_id"]) == (f"{request.trace_id:032x}", f"{request.span_id:016x}")
    # Made in the handler process, a child of the attempt's span made in the worker.
    assert work["pid"] not in (worker.pid, 0) and work["attributes"]["pid"] == work["pid"]
    assert (work["trace_id"], work["parent_id"]) == (attempt["trace_id"], attempt["span_id"])
    # The handler process's log line ends with the ids of the span it was written in.
    line = wait_for(
        lambda: re.search(rf"working on {task_id}.*", (tmp_path / "worker.log").read_text()), what="its log line"
    )
    assert line.group(0).endswith(f"trace_id={work['trace_id']} span_id={work['span_id']}")

    # The worker's own line about a failure, written in the worker process, ends with the attempt's ids.
    failing_id, _ = enqueue_traced(client, b"fail")
    failed = next(
        s for s in spans_named(tmp_path, f"process {Q}", 2) if s["attributes"]["messaging.message.id"] == failing_id
    )
    line = wait_for(
        lambda: re.search(rf"task {failing_id} \(traced:work\) failed: .*", (tmp_path / "worker.log").read_text()),
        what="the worker's line about the failure",
    )
    assert line.group(0).endswith(f"asked to fail trace_id={failed['trace_id']} span_id={failed['span_id']}")


@pytest.mark.slow
def test_each_worker_process_traces_its_own_attempts(
    spans, processes, redis_url: str, client: Client, inspector: Inspector, tmp_path: Path
):
    supervisor = traced_worker(
        processes, redis_url, tmp_path, "--processes", "2", "--concurrency", "1", "--prefetch", "0"
    )
    children = wait_for(lambda: len(found := inspector.servers()) == 2 and {s.pid for s in found}, 60, what="2 workers")
    assert supervisor.pid not in children
    # The first two tasks wait for each other: with one slot each, they run in the two processes.
    sent = dict(enqueue_traced(client, b"meet") for _ in range(6))
    attempts = spans_named(tmp_path, f"process {Q}", 6)

    assert {a["pid"] for a in attempts} == children  # each process made spans, and only the workers did
    for attempt in attempts:
        request = sent[attempt["attributes"]["messaging.message.id"]]
        assert (attempt["trace_id"], attempt["parent_id"]) == (f"{request.trace_id:032x}", f"{request.span_id:016x}")
    works = {w["parent_id"]: w for w in spans_named(tmp_path, "handler work", 6)}
    assert set(works) == {a["span_id"] for a in attempts}
