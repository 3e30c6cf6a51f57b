"""A worker without the ``otel`` extra: in a process where ``opentelemetry`` cannot be imported, a producer and a
worker (each in-process pool) run tasks unchanged, a failure and its retry included, and nothing of OpenTelemetry is
imported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from worker_support import ROOT

SCRIPT = """
import json, sys, time
sys.modules["opentelemetry"] = None  # the extra is not installed: any import of it fails

from taskq.queues.engine import Client, FakeClock, Registry, Task, handler
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server
import logging
logging.basicConfig(level=logging.INFO)

url, pool = sys.argv[1], sys.argv[2]
registry, runs = Registry(), []

@handler("plain:flaky", registry=registry, retry_delay=lambda *_: 0.0)
def flaky(task: Task) -> None:
    runs.append(task.retried)
    logging.getLogger("plain").info("run %d", task.retried)
    if task.retried == 0:
        raise ValueError("first run fails")

clock = FakeClock()
with Client(url, clock=clock) as client:
    info = client.enqueue("plain:flaky", b"", max_retry=2, retention=60)
    config = WorkerConfig(redis_url=url, pool=pool, concurrency=2, forwarder_interval=0.05)
    server = Server(config, registry, clock=clock)
    server.start()
    deadline = time.monotonic() + 30
    while runs != [0, 1] and time.monotonic() < deadline:
        time.sleep(0.02)
    server.stop()
loaded = sorted(name for name, module in sys.modules.items() if name.startswith("opentelemetry") and module)
print(json.dumps({"runs": runs, "loaded": loaded}))
"""


@pytest.mark.parametrize("pool", ["thread", "asyncio"])
def test_a_worker_without_the_extra_runs_tasks_and_imports_nothing_of_opentelemetry(r, redis_url: str, pool: str):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, redis_url, pool], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"runs": [0, 1], "loaded": []}
    assert "Traceback" not in done.stderr
