"""The worker's own metrics port: run-time histograms by queue and type, tasks in flight, fetch latency;
also in prometheus_client's multi-process mode, in a real worker process."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from worker_support import free_port, wait_for, worker_env

from queues.engine import handler

REPO = Path(__file__).resolve().parents[2]


def samples(url: str) -> dict[str, dict[tuple, float]]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_worker_exports_run_times_in_flight_and_fetch_latency(make_server, registry, client):
    @handler("metrics:ok", registry=registry)
    def ok(task):
        pass

    @handler("metrics:bad", registry=registry)
    def bad(task):
        raise RuntimeError("no")

    server = make_server(metrics_port=0, metrics_host="127.0.0.1")
    url = f"http://127.0.0.1:{server.metrics_server.server_address[1]}/metrics"
    client.enqueue_many([("metrics:ok", b"")] * 5 + [("metrics:bad", b"")] * 2)
    key_ok = (("outcome", "success"), ("queue", "default"), ("type", "metrics:ok"))
    key_bad = (("outcome", "failure"), ("queue", "default"), ("type", "metrics:bad"))
    wait_for(lambda: samples(url).get("taskq_task_runtime_seconds_count", {}).get(key_bad) == 2,
             what="failed runs counted")
    series = samples(url)
    assert series["taskq_task_runtime_seconds_count"][key_ok] == 5
    assert series["taskq_task_runtime_seconds_bucket"][tuple(sorted(key_ok + (("le", "+Inf"),)))] == 5
    assert series["taskq_worker_tasks_in_flight"][(("queue", "default"),)] == 0
    assert series["taskq_worker_fetch_latency_seconds_count"][()] >= 1


def test_multiprocess_mode_in_a_real_worker_process(tmp_path, redis_url, r, client, processes):
    port = free_port(19100)
    env = worker_env(redis_url) | {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    processes.append(subprocess.Popen(
        [sys.executable, "manage.py", "taskworker", "--queues", "default", "--metrics-port", str(port),
         "--metrics-host", "127.0.0.1", "--import", "tests.worker.crash_tasks"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    url = f"http://127.0.0.1:{port}/metrics"

    def served() -> bool:
        try:
            return "taskq_worker_fetch_latency_seconds_count" in samples(url)
        except OSError:
            return False

    wait_for(served, what="the worker's metrics port")
    assert list(tmp_path.glob("*.db")), "values are kept in the multi-process folder"
