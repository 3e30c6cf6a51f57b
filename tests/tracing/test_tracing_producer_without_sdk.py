"""Producers without tracing, each in a process of its own (the tests' SDK provider is set once per process, so
these cannot share it): with the ``otel`` extra missing (``sys.modules["opentelemetry"] = None``) every producer
path works and nothing of OpenTelemetry is imported; with the API but no SDK, taskq asks for no tracer (so makes
no span) and the tasks' headers are the caller's, even inside the application's own (non-recording) span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PRODUCE = """
import asyncio, json, sys
from taskq.queues.engine import AsyncClient, Client, Inspector, chain, sig, tracing
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.scheduler_store import SchedulerStore

url = sys.argv[1]

def produce():
    with Client(url, policies=False) as client:
        one = client.enqueue("a", headers={"mine": "kept"})
        many = client.enqueue_many([("b", 1), ("c", 2)])
        flow = client.submit(chain(sig("d"), sig("e")))

    async def awaited():
        async with AsyncClient(url, policies=False) as client:
            return await client.enqueue("f")

    ids = [info.id for info in (one, *many, *flow.members, asyncio.run(awaited()))]
    broker = Broker(url)
    entry = make_entry("@every 10s", "g")
    tick = float(int(broker.clock.now()) - 1)  # whole milliseconds: the task id names the tick
    status = SchedulerStore(broker).fire(entry, tick)
    broker.close()
    ids.append(entry.task_id(int(tick * 1000)))
    with Inspector(url) as inspector:
        return [inspector.get_task("default", task_id).headers for task_id in ids], status

{setup}
headers, status = produce()
loaded = sorted(m for m, module in sys.modules.items() if m.startswith("opentelemetry") and module is not None)
print(json.dumps({"headers": headers, "status": status, "loaded": loaded, "available": tracing.available()}))
"""

WITHOUT_EXTRA = """
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed: any import of it fails
"""

API_WITHOUT_SDK = """
from opentelemetry import trace

def refused(*args, **kwargs):
    raise AssertionError("taskq asked for a tracer although nothing records")

tracing.tracer = refused  # every span taskq makes starts from tracing.tracer()
produce_outside = produce

def produce():
    with trace.get_tracer("app").start_as_current_span("request"):  # no SDK: a non-recording, invalid span
        return produce_outside()
"""

EXPECTED_HEADERS = [{"mine": "kept"}, {}, {}, {}, {}, {}, {}]


def run(setup: str, redis_url: str) -> dict:
    script = PRODUCE.replace("{setup}", setup)
    if setup is WITHOUT_EXTRA:  # the guard goes before taskq is imported
        script = "import sys\n" + WITHOUT_EXTRA + script
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script, redis_url], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.usefixtures("r")
def test_without_the_extra_every_producer_path_works_and_imports_nothing_of_opentelemetry(redis_url):
    out = run(WITHOUT_EXTRA, redis_url)
    assert out == {"headers": EXPECTED_HEADERS, "status": "enqueued", "loaded": [], "available": False}


@pytest.mark.usefixtures("r")
def test_with_the_api_but_no_sdk_no_span_is_made_and_the_headers_are_the_callers(redis_url):
    out = run(API_WITHOUT_SDK, redis_url)
    assert out["headers"] == EXPECTED_HEADERS and out["status"] == "enqueued"
    assert out["available"] is True and "opentelemetry.trace" in out["loaded"]
