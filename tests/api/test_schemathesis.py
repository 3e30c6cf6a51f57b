"""Schemathesis, driven only by ``/api/v1/openapi.json``, against a real daphne and Redis: every check, the
stateful phase included, for a bounded time. It must find nothing, and its stateful phase must get past 404 on
the operations behind a task id (the OpenAPI links lead it there).

The seed is random and printed (``Seed: …`` in Schemathesis's output, shown on failure); replay a run with
``TASKQ_SCHEMATHESIS_SEED=<seed>``. ``TASKQ_SCHEMATHESIS_SECONDS`` changes the time budget (default 120 s, two
fifths for the stateless phases, the rest for the stateful one, which walks once more with the next seed when its first
walk did not reach every operation on a task)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taskq.queues.api.openapi import document
from tests.live.daphne_console import ROOT, daphne_console, manage
from tests.ports import free_port, given_ports

#: Operations on one task; each must find the task in a stateful step at least once (``reached``).
TASK_OPERATIONS = {
    ("GET", "/api/v1/queues/{queue}/tasks/{task_id}"),
    ("DELETE", "/api/v1/queues/{queue}/tasks/{task_id}"),
    ("POST", "/api/v1/queues/{queue}/tasks/{task_id}/ack"),
    ("POST", "/api/v1/queues/{queue}/tasks/{task_id}/fail"),
    ("POST", "/api/v1/queues/{queue}/tasks/{task_id}/extend"),
    ("GET", "/api/v1/queues/{queue}/deadletters/{task_id}"),
    ("DELETE", "/api/v1/queues/{queue}/deadletters/{task_id}"),
    ("POST", "/api/v1/queues/{queue}/deadletters/{task_id}/respawn"),
}


def operation_of(method: str, url: str) -> tuple[str, str] | None:
    """The documented operation a request of the HAR log went to."""
    path = url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
    for template, item in document()["paths"].items():
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template))
        if method.lower() in item and re.fullmatch(pattern, "/" + path):
            return method, template
    return None


def reached(har: dict[str, Any]) -> set[tuple[str, str]]:
    """The operations that found a task at least once: a success, or a 409 failed_precondition (the task is there,
    in another state). Not a 409 lease_lost, which a made-up id gets too."""
    found = set()
    for entry in har["log"]["entries"]:
        status, text = entry["response"]["status"], entry["response"]["content"].get("text", "")
        if 200 <= status < 300 or (status == 409 and '"failed_precondition"' in text):
            op = operation_of(entry["request"]["method"], entry["request"]["url"])
            if op:
                found.add(op)
    return found


#: The stateful phase walks the document's own links (none inferred from responses), in walks long enough for
#: publish -> consume -> extend -> fail -> consume -> ack and on to the dead letters.
CONFIG = """
[phases.stateful]
max-steps = 10
[phases.stateful.inference]
algorithms = []
"""


def schemathesis(config: Path, url: str, token: str, seed: int, phases: str, seconds: int, report: Path) -> str:
    """One Schemathesis run, every check on; its output, after asserting that it found nothing."""
    run = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{url}/api/v1/openapi.json"]
        + ["--header", f"Authorization: Bearer {token}", "--checks", "all", "--seed", str(seed), "--phases", phases]
        + ["--max-time", str(seconds), "--workers", "1", "--request-timeout", "30", "--generation-database", "none"]
        + ["--report", "json,har", "--report-dir", str(report), "--no-color"],
        cwd=report.parent,  # Schemathesis keeps a cache in the working directory: the test's own, not the checkout
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=seconds + 240,
    )
    output = f"phases {phases}, seed {seed}\n{run.stdout[-20000:]}\n{run.stderr[-5000:]}"
    assert run.returncode == 0, output
    summary = json.loads(next(report.glob("json-*.json")).read_text())
    assert summary["seed"] == seed and not summary["failures"] and not summary["errors"], output
    return output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_schemathesis_finds_nothing(tmp_path, redis_client, redis_url):
    """The stateless phases, then the stateful one, each with its share of the budget: run together, the fuzzing
    phase would keep most of it."""
    seed = int(os.environ.get("TASKQ_SCHEMATHESIS_SEED") or random.randrange(2**32))
    seconds = int(os.environ.get("TASKQ_SCHEMATHESIS_SECONDS", "120"))
    print(f"Schemathesis seed {seed}: replay with TASKQ_SCHEMATHESIS_SEED={seed}")
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    with daphne_console(tmp_path, redis_url, free_port(given_ports())) as console:
        created = manage(console.env, "tasks", "token", "create", "--name", "schemathesis", "--queues", "*", "--json")
        token = json.loads(created[created.index("{") :])["token"]
        stateless = seconds * 2 // 5
        schemathesis(config, console.url, token, seed, "examples,coverage,fuzzing", stateless, tmp_path / "stateless")
        found: set[tuple[str, str]] = set()
        # A busy machine walks fewer steps in the budget (CI once reached every operation but one in 72 s): then one
        # more stateful walk, with the next seed, and the operations either walk reached count. Each must find nothing.
        for walk in range(2):
            report = tmp_path / f"stateful-{walk}"
            walk_seed = (seed + walk) % 2**32
            output = schemathesis(config, console.url, token, walk_seed, "stateful", seconds - stateless, report)
            summary = json.loads(next(report.glob("json-*.json")).read_text())
            assert summary["phases"]["stateful"]["status"] == "success", output
            found |= reached(json.loads(next(report.glob("har-*.json")).read_text()))
            if TASK_OPERATIONS <= found:
                break
    assert TASK_OPERATIONS <= found, (TASK_OPERATIONS - found, output)
