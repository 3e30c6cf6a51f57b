"""Integration: a real worker process runs a Spark task on a standalone cluster (Master and Worker started from
pyspark's own spark-class) and on a Spark Connect server (pyspark's sbin/start-connect-server.sh)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from spark_support import state_of, wait_for

from taskq.queues.engine import Inspector
from tests.ports import free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, []

    def start(self, name: str, argv: list[str], **env: str) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")
        full = dict(os.environ, SPARK_LOG_DIR=str(self.tmp), SPARK_PID_DIR=str(self.tmp), PYTHONUNBUFFERED="1", **env)
        proc = subprocess.Popen(argv, cwd=REPO, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait(5)


@pytest.fixture
def procs(tmp_path):
    p = Processes(tmp_path)
    yield p
    p.stop()


def daemon(*args: str) -> list[str]:
    return [sys.executable, "-m", "taskq.worker.spark_daemons", *args]


def run_spark_task(procs, client, redis_url: str, **spark_env: str) -> dict:
    """Start a taskworker on the given Spark and run report:cluster on it (the worker is left running)."""
    procs.start(
        "taskworker",
        [
            sys.executable,
            "manage.py",
            "taskworker",
            "--queues",
            "sparkq",
            "--concurrency",
            "1",
            "--import",
            "cluster_tasks",
        ],
        **{"REDIS_URL": redis_url, "PYTHONPATH": f"{HERE}:{REPO}", "SPARK_CONF": "spark.ui.enabled=false", **spark_env},
    )
    info = client.enqueue("report:cluster", {}, queue="sparkq", retention=600, timeout=300)
    final = client.wait(info.id, queue="sparkq", timeout=240)
    assert final.state == "completed", (final.last_error, procs.log("taskworker"))
    return {"result": json.loads(final.result), "progress": final.progress}


def test_spark_task_on_a_standalone_cluster(procs, client, redis_url):
    port, ui = free_port(), free_port()
    procs.start(
        "master",
        daemon("master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
        SPARK_DAEMON_MEMORY="384m",
    )
    wait_for(lambda: port_open(ui), timeout=90, what="the Spark master")
    procs.start(
        "worker",
        daemon(
            "worker",
            f"spark://127.0.0.1:{port}",
            "--cores",
            "1",
            "--memory",
            "768m",
            "--host",
            "127.0.0.1",
            "--webui-port",
            str(free_port()),
        ),
        SPARK_DAEMON_MEMORY="384m",
    )

    def alive_workers() -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json", timeout=3) as reply:
                return json.load(reply).get("aliveworkers", 0)
        except (OSError, ValueError):
            # While the master starts, its UI answers 404, or its HTML page before the /json handler is attached.
            return 0

    wait_for(alive_workers, timeout=90, what="a Spark worker to register")
    out = run_spark_task(
        procs,
        client,
        redis_url,
        SPARK_MASTER=f"spark://127.0.0.1:{port}",
        SPARK_CONF="spark.ui.enabled=false;spark.executor.memory=512m;spark.cores.max=1",
    )
    assert out["result"] == {"sum": 4_999_950_000}
    done, total = out["progress"]
    assert total >= 4 and done == total


def test_spark_task_on_a_spark_connect_server(procs, client, redis_url):
    port = free_port()
    procs.start("connect", daemon("connect", "--port", str(port), "--master", "local[1]"))
    deadline = time.monotonic() + 120
    while not port_open(port):
        assert procs.procs[0][1].poll() is None, procs.log("connect")
        assert time.monotonic() < deadline, procs.log("connect")
        time.sleep(0.5)
    out = run_spark_task(procs, client, redis_url, SPARK_REMOTE=f"sc://127.0.0.1:{port}")
    assert out["result"] == {"sum": 4_999_950_000}

    # Cancel on Connect: the worker interrupts the task's session tag on the server, so the handler's endless
    # query returns at once and the task goes to retry (it would stay active for hours otherwise).
    inspector = Inspector(redis_url)
    marker = procs.tmp / "endless.txt"
    info = client.enqueue("report:endless", {"marker": str(marker)}, queue="sparkq", max_retry=3, timeout=3600)
    wait_for(lambda: state_of(inspector, "sparkq", info.id) == "active", timeout=60, what="the endless task to start")
    time.sleep(2)  # let the query reach the server; cancelling before it does is the easy case
    inspector.cancel_task("sparkq", info.id)

    def retried() -> bool:
        assert procs.procs[-1][1].poll() is None, procs.log("taskworker")
        return state_of(inspector, "sparkq", info.id) == "retry"

    wait_for(retried, timeout=90, what="the cancelled task to go to retry")
    assert "cancelled by an operator" in inspector.get_task("sparkq", info.id).last_error
    wait_for(marker.exists, timeout=90, what="the endless query to be interrupted on the Connect server")
    ended = marker.read_text()
    assert "OPERATION_CANCELED" in ended, ended  # the server says it interrupted the query
