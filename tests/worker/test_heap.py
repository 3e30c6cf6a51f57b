"""The worker process settles CPython's garbage collector before its first task (worker/heap.py): what start-up built
is frozen, and young collections run every ``YOUNG_THRESHOLD`` allocations. Checked in processes of their own, since
freezing the test process would keep its garbage for good."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from worker_support import ROOT, start_taskworker

from taskq.queues.engine import Client
from taskq.worker.heap import YOUNG_THRESHOLD


def test_settle_freezes_the_heap_and_makes_young_collections_rarer():
    code = (
        "import gc, json; from taskq.worker import heap; before = gc.get_threshold(); heap.settle(); "
        "print(json.dumps({'frozen': gc.get_freeze_count(), 'before': before, 'after': gc.get_threshold()}))"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True).stdout)
    assert out["frozen"] > 1000  # the interpreter and the modules imported so far
    young, middle, old = out["before"]
    assert young < YOUNG_THRESHOLD
    assert out["after"] == [YOUNG_THRESHOLD, middle, old]  # only the young generation changes


def test_the_taskworker_command_settles_the_heap_before_its_first_task(redis_url, processes, tmp_path: Path):
    assert gc.get_freeze_count() == 0  # this process is left as it was
    start_taskworker(
        processes, redis_url, tmp_path / "worker.log", "--queues", "heap", "--import", "tests.worker.heap_tasks"
    )
    client = Client(redis_url)
    try:
        info = client.enqueue("test:gc", queue="heap", retention=60)
        done = client.wait(info.id, queue="heap", timeout=60)
    finally:
        client.close()
    report = done.result_json()
    assert report["frozen"] > 10_000, report  # Django, the handlers and the server, frozen at start
    assert report["threshold"][0] == YOUNG_THRESHOLD
