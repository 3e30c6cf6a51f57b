"""The worker's health endpoint (``taskworker --health-port``) and ``tasks health``: a real HTTP port, real worker
threads and processes, a real Redis that goes away."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import FakeClock
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.worker_store import WorkerStore
from tests.chaos.chaos_support import RedisServer, free_port
from tests.cli.helpers import invoke
from taskq.worker.health import WorkerHealth

REPO = Path(__file__).resolve().parents[2]
PORTS = range(18601, 18610)  # this suite's ports


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def health_url(server) -> str:
    return f"http://127.0.0.1:{server.health_server.server_address[1]}/healthz"


def test_healthy_server_then_a_stopped_loop_is_named(make_server):
    server = make_server(health_port=0, health_host="127.0.0.1")
    url = health_url(server)
    status, doc = wait_for(lambda: (reply := get(url))[0] == 200 and reply, what="a healthy worker")
    assert doc["status"] == "ok"
    assert doc["checks"]["loops"] == {"ok": True, "stopped": []}
    assert doc["checks"]["heartbeat"]["ok"] and doc["checks"]["heartbeat"]["max_age_seconds"] == pytest.approx(0.6)

    server.recoverer.stop()
    status, doc = get(url)
    assert status == 503 and doc["status"] == "unhealthy"
    assert doc["checks"]["loops"] == {"ok": False, "stopped": ["recoverer"]}


def test_heartbeat_age_is_measured_on_the_worker_clock():
    clock = FakeClock(1000.0)
    beat: list[float | None] = [None]
    alive = threading.Event()
    health = WorkerHealth({"loop": alive.is_set}, lambda: beat[0], max_age=3.0, now=clock.now)
    alive.set()
    assert health.report() == (
        False,
        {
            "status": "unhealthy",
            "checks": {
                "loops": {"ok": True, "stopped": []},
                "heartbeat": {"ok": False, "age_seconds": None, "max_age_seconds": 3.0},
            },
        },
    )
    beat[0] = 999.0
    assert health.report()[0] is True
    clock.advance(3.5)
    healthy, doc = health.report()
    assert not healthy and doc["checks"]["heartbeat"] == {"ok": False, "age_seconds": 4.5, "max_age_seconds": 3.0}


def test_unknown_path_is_404(make_server):
    server = make_server(health_port=0, health_host="127.0.0.1")
    status, doc = get(health_url(server).replace("/healthz", "/nope"))
    assert status == 404 and "/healthz" in doc["error"]


def test_real_worker_turns_unhealthy_when_its_redis_goes_away(tmp_path, processes):
    redis_server = RedisServer(tmp_path / "redis")
    redis_server.port = free_port(range(PORTS.start, PORTS.start + 4))
    redis_server.url = f"redis://127.0.0.1:{redis_server.port}/0"  # db 0 of our own throwaway server
    redis_server.start()
    try:
        port = free_port(range(PORTS.start + 4, PORTS.stop))
        start_taskworker(
            processes,
            redis_server.url,
            tmp_path / "worker.log",
            *("--queues", "default", "--health-port", str(port), "--health-host", "127.0.0.1"),
            TASKS_HEARTBEAT_SECONDS="0.2",
        )
        url = f"http://127.0.0.1:{port}/healthz"

        def status() -> tuple[int, dict] | None:
            try:
                return get(url)
            except OSError:
                return None

        wait_for(lambda: (reply := status()) and reply[0] == 200, what="the worker's health port to say ok")
        redis_server.kill9()
        code, doc = wait_for(lambda: (reply := status()) and reply[0] == 503 and reply, what="a stale heartbeat")
        heartbeat = doc["checks"]["heartbeat"]
        # The age is rounded to milliseconds, so one just past the limit may read as the limit itself.
        assert heartbeat["ok"] is False and heartbeat["age_seconds"] >= heartbeat["max_age_seconds"] == 0.6
        assert doc["checks"]["loops"]["ok"] is True  # the loops back off; they do not die
    finally:
        redis_server.stop()


# -- tasks health --max-age [--server] ------------------------------------------------------------------------------


@pytest.fixture
def cli(settings, redis_url, r):
    settings.REDIS_URL = redis_url
    return invoke


def register(redis_url: str, server_id: str, host: str, beat_ago: float) -> None:
    """A server entry as a worker's heartbeat writes it, ``beat_ago`` seconds ago, still within its TTL."""
    broker = Broker(redis_url)
    try:
        info = {
            "id": server_id,
            "host": host,
            "pid": 1,
            "started": 0,
            "status": "active",
            "queues": {"default": 1},
            "strict": False,
            "concurrency": 1,
            "active_count": 0,
            "heartbeat": to_ms(broker.clock.now() - beat_ago),
        }
        WorkerStore(broker).write_server(info, {}, ttl=600)
    finally:
        broker.close()


def test_tasks_health_without_any_worker_fails(cli):
    result = cli("health", "--max-age", "30")
    assert (result.code, result.out) == (1, "")
    assert result.err == "error: no heartbeat from any worker (unhealthy)\n"


def test_tasks_health_by_age_and_server(cli, redis_url):
    register(redis_url, "old:1:a", "old-host", beat_ago=60)
    register(redis_url, "new:2:b", "new-host", beat_ago=1)

    ok = cli("health", "--max-age", "30")
    assert ok.code == 0 and "new:2:b" in ok.out
    assert cli("--json", "health", "--max-age", "30").json()["healthy"] == ["new:2:b"]
    assert cli("health", "--max-age", "30", "--server", "new-host").code == 0

    stale = cli("health", "--max-age", "30", "--server", "old:1:a")
    assert stale.code == 1
    assert 'no heartbeat from server "old:1:a" in the last 30 s; the newest is 1m' in stale.err
    assert cli("health", "--max-age", "90", "--server", "old-host").code == 0
    assert cli("health", "--max-age", "30", "--server", "other").code == 1


@pytest.mark.parametrize("bad", [["--max-age", "0"], ["--max-age", "x"], []])
def test_tasks_health_usage_errors(cli, bad):
    result = cli("health", *bad)
    assert result.code == 2 and result.out == ""
