"""The worker is wired in one place: the server builds each part with what it needs, and no part is handed another
after it was built (an attribute of another object assigned from outside), so reading a part's constructor tells
everything it works with.

The source check walks worker/ for assignments to an attribute of anything but ``self``. Records handed between
threads (an attempt, its outcome, a task, what a dequeue leased...) are data, not parts, and are meant to be
filled in as the attempt goes; they are listed by the names they go by, each with what it is."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from taskq.worker.server import Server

WORKER = Path(__file__).resolve().parents[2] / "worker"

#: Names under which the worker fills in records, not parts: writing their fields is what they are for.
RECORDS = {
    "attempt": "Attempt, one run of one task (worker/attempt.py)",
    "outcome": "Outcome, how an attempt ended",
    "task": "Task, the handler's view of the attempt (task.spark for Spark handlers)",
    "leased": "Dequeued, what a dequeue or an ack leased",
    "stand_in": "an exception built to cross from a handler process",
    "child": "a supervised worker process's record (worker/supervisor.py)",
    "server": "an HTTP server configured right where it is made (worker/health.py)",
    "record": "LogRecord, a log line (worker/trace_logs.py adds the current span's ids)",
}


def _owned_by_self(node: ast.expr) -> bool:
    """``self.x`` itself, or a private member of self (``self._local.progress``): the object's own state."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr.startswith("_")
    return False


def patched_from_outside(source: str) -> list[tuple[int, str]]:
    """(line, target) of each assignment to an attribute of an object other than ``self`` and the records."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for item in target.elts if isinstance(target, ast.Tuple | ast.List) else [target]:
                if not isinstance(item, ast.Attribute) or _owned_by_self(item.value):
                    continue
                if isinstance(item.value, ast.Name) and item.value.id in RECORDS:
                    continue
                found.append((item.lineno, ast.unparse(item)))
    return found


def test_no_part_of_the_worker_is_handed_another_after_it_was_built():
    patched = [
        f"{path.relative_to(WORKER.parent)}:{line}: {target} = ..."
        for path in sorted(WORKER.rglob("*.py"))
        if "testing" not in path.relative_to(WORKER).parts  # the pytest plugin sets Django's test settings
        for line, target in patched_from_outside(path.read_text())
    ]
    assert not patched, "parts patched after construction (give them to the constructor instead):\n" + "\n".join(
        patched
    )


@pytest.mark.parametrize(
    "source",
    [
        "acker.refill = self",  # the processor making itself the acker's refill
        "self.spark = self.processor.spark = SparkRunner(config.spark)",  # the server patching the processor
        "self.heartbeat.status = 'stopping'",
        "server.processor.wake, x = event, 1",
        "self.acker.failed += 1",
    ],
)
def test_the_check_finds_a_part_patched_from_outside(source):
    assert patched_from_outside(source)


@pytest.mark.parametrize(
    "source", ["self.status = 'quiet'", "attempt.holds_slot = True", "self._local.progress = None", "x = y.z"]
)
def test_the_check_leaves_a_parts_own_state_and_the_records_alone(source):
    assert patched_from_outside(source) == []


def test_the_server_builds_each_part_with_the_parts_it_works_with(make_server):
    server: Server = make_server(start=False)
    processor, acker = server.processor, server.acker
    assert processor.outbox is acker.outbox  # what the processor submits is what the acker writes
    assert acker.backlog is server.syncer.backlog  # what the acker could not write is what the syncer retries
    assert acker.refill is processor  # fetch-on-ack fills the processor's slots
    assert acker.on_written == processor.forget
    assert processor.spark is server.spark
    assert server.definitions.on_change == processor.wake.set
    assert server.subscriber.processor is processor and server.heartbeat.processor is processor


def test_without_fetch_on_ack_the_acker_fills_no_slot(make_server):
    assert make_server(start=False, fetch_on_ack=False).acker.refill is None
