"""Real worker processes: SIGKILL one of two workers mid-run and lose nothing; kill -9 the Redis server itself
(AOF, fsync always) under a producer and a worker, restart it, and lose no acknowledged enqueue.

The workers are ``manage.py taskworker`` subprocesses with short leases from the environment; the handler
(``crash_tasks.record``) adds each task id to a Redis set when it runs to the end."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from worker_support import free_port, kill_process, wait_for, worker_env

from queues.engine import Client, EngineError, Inspector, RedisUnavailableError, TaskIdConflictError
from worker.recoverer import LEASE_EXPIRED

ROOT = Path(__file__).resolve().parents[2]
TASK = "test:record"
DONE_KEY = "test:done"  # crash_tasks.DONE_KEY (not imported: it would register its handler in this process)


def start_worker(processes: list[subprocess.Popen], redis_url: str, queue: str, log: Path,
                 concurrency: int = 4) -> subprocess.Popen:
    out = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "taskworker", "--queues", queue, "--concurrency", str(concurrency),
         "--import", "tests.worker.crash_tasks"],
        cwd=ROOT, env=worker_env(redis_url), stdout=out, stderr=subprocess.STDOUT)
    out.close()
    processes.append(proc)
    return proc


def servers_up(inspector: Inspector, procs: list[subprocess.Popen]) -> dict[int, object]:
    for proc in procs:
        assert proc.poll() is None, f"worker {proc.pid} exited with {proc.returncode}"
    found = {s.pid: s for s in inspector.servers()}
    return found if all(p.pid in found for p in procs) else {}


def logs(path: Path) -> str:
    return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-4000:]}" for f in sorted(path.glob("*.log")))


@pytest.mark.slow
def test_sigkilled_worker_loses_no_task(r: redis.Redis, redis_url: str, processes, tmp_path: Path):
    inspector = Inspector(redis_url)
    client = Client(redis_url)
    try:
        victim = start_worker(processes, redis_url, "crash", tmp_path / "victim.log")
        survivor = start_worker(processes, redis_url, "crash", tmp_path / "survivor.log")
        wait_for(lambda: servers_up(inspector, [victim, survivor]), timeout=30, what="both workers up")

        infos = client.enqueue_many([(TASK, {"sleep": 0.1})] * 200, queue="crash")
        ids = {info.id for info in infos}
        assert len(ids) == 200

        def victim_busy() -> bool:
            server = servers_up(inspector, [victim, survivor])[victim.pid]
            return r.scard(DONE_KEY) >= 30 and len(server.active) > 0  # type: ignore[attr-defined]

        wait_for(victim_busy, timeout=30, what="the victim running tasks after 30 completions")
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at_done = r.scard(DONE_KEY)
        assert killed_at_done < 200, "the run ended before the kill; make the tasks longer"

        wait_for(lambda: r.scard(DONE_KEY) == 200, timeout=30,
                 what=f"all 200 tasks done (killed at {killed_at_done})\n{logs(tmp_path)}")
        assert {m.decode() for m in r.smembers(DONE_KEY)} == ids

        def drained():
            info = inspector.queue_info("crash")
            return (info.pending, info.active, info.scheduled, info.retry, info.archived) == (0, 0, 0, 0, 0)

        wait_for(drained, timeout=15, what="nothing left in the queue")
        # The kill really hit running tasks: the survivor's recoverer took at least one back after its lease.
        events = r.xrange(inspector.keys.queue("crash").events)
        recovered = [f for _, f in events if f.get(b"to") == b"retry" and f.get(b"error") == LEASE_EXPIRED.encode()]
        assert recovered, "no task was recovered from the killed worker"
        assert survivor.poll() is None
    finally:
        client.close()
        inspector.broker.close()


def start_redis(port: int, data: Path, processes: list[subprocess.Popen]) -> subprocess.Popen:
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "yes",
         "--appendfsync", "always", "--dir", str(data), "--save", "", "--daemonize", "no",
         "--logfile", str(data / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    processes.append(proc)
    probe = redis.Redis(port=port, socket_connect_timeout=0.5)

    def answers() -> bool:
        try:
            return bool(probe.ping())
        except redis.ConnectionError:
            assert proc.poll() is None, f"redis-server exited:\n{(data / 'redis.log').read_text()[-2000:]}"
            return False

    wait_for(answers, timeout=15, interval=0.05, what=f"redis-server on port {port}")
    probe.close()
    return proc


@pytest.mark.chaos
def test_redis_outage_loses_no_acknowledged_enqueue(processes, tmp_path: Path):
    port = free_port(6391)
    data = tmp_path / "redis"
    data.mkdir()
    url = f"redis://127.0.0.1:{port}/0"  # db 0 of our own throwaway server, not the shared one
    servers = [start_redis(port, data, processes)]
    worker = start_worker(processes, url, "outage", tmp_path / "worker.log", concurrency=10)
    client = Client(url)
    inspector = Inspector(url)
    r = redis.Redis.from_url(url, socket_connect_timeout=1)
    timer: threading.Timer | None = None
    try:
        wait_for(lambda: servers_up(inspector, [worker]), timeout=30, what="worker up")

        acknowledged: list[str] = []
        refused_at_least_once: set[str] = set()
        restarted = threading.Event()

        def restart() -> None:
            servers.append(start_redis(port, data, processes))
            restarted.set()

        timer = threading.Timer(1.0, restart)

        for n in range(1000):
            task_id = f"task-{n:04d}"
            if n == 500:
                servers[0].send_signal(signal.SIGKILL)  # kill -9 the Redis server mid-stream
                servers[0].wait(10)
                timer.start()  # restart it on the same port and directory a second later
            give_up = time.monotonic() + 30
            while True:
                try:
                    client.enqueue(TASK, {"sleep": 0.002}, queue="outage", task_id=task_id)
                    break
                except TaskIdConflictError:
                    break  # an earlier try landed; only its reply was lost
                except RedisUnavailableError:
                    refused_at_least_once.add(task_id)
                    assert time.monotonic() < give_up, "Redis did not come back"
                    time.sleep(0.05)
            acknowledged.append(task_id)

        assert restarted.wait(30)
        assert refused_at_least_once, "the producer never saw the outage"
        assert len(acknowledged) == 1000

        def all_done() -> bool:
            return r.scard(DONE_KEY) == 1000

        wait_for(all_done, timeout=30, interval=0.1,
                 what=f"every acknowledged task done (have {r.scard(DONE_KEY)})\n{logs(tmp_path)}")
        assert {m.decode() for m in r.smembers(DONE_KEY)} == set(acknowledged)

        def drained():
            info = inspector.queue_info("outage")
            return (info.pending, info.active, info.scheduled, info.retry, info.archived) == (0, 0, 0, 0, 0)

        wait_for(drained, timeout=15, what="nothing left in the queue")
        assert worker.poll() is None, "the worker died with Redis"
        # Reconnected for real: it heartbeats to the new server and runs new work.
        wait_for(lambda: servers_up(inspector, [worker]), timeout=15, what="the worker's heartbeat after restart")
        late = client.enqueue(TASK, {}, queue="outage")
        wait_for(lambda: r.sismember(DONE_KEY, late.id), timeout=15, what="a task enqueued after the outage ran")
    finally:
        if timer is not None:
            timer.cancel()
            if timer.is_alive():
                timer.join(30)  # a restart under way: let it finish so its server is killed below
        client.close()
        inspector.broker.close()
        r.close()
        kill_process(worker)
        for server in servers:
            kill_process(server)
        shutil.rmtree(data, ignore_errors=True)


@pytest.mark.chaos
def test_a_redis_that_refuses_writes_for_a_while_does_not_stop_the_worker(processes, tmp_path: Path):
    """READONLY replies (the server was demoted to a replica, as in a failover) are not connection errors: the
    fetch loop must keep trying and the acker must keep the outcome until writes are accepted again."""
    from queues.engine import Registry, Task, handler
    from worker.config import WorkerConfig
    from worker.server import Server

    port = free_port(6391)
    data = tmp_path / "redis"
    data.mkdir()
    url = f"redis://127.0.0.1:{port}/0"
    servers = [start_redis(port, data, processes)]
    registry = Registry()
    started, release, runs = threading.Event(), threading.Event(), []

    @handler("slow", registry=registry)
    def slow(task: Task) -> None:
        started.set()
        release.wait(10)
        runs.append(task.id)

    @handler("quick", registry=registry)
    def quick(task: Task) -> None:
        runs.append(task.id)

    server = Server(WorkerConfig(redis_url=url, lease=10.0, heartbeat_interval=0.2, forwarder_interval=0.1,
                                 idle_wait=0.1, shutdown_timeout=0.5), registry)
    client, inspector = Client(url), Inspector(url)
    r = redis.Redis.from_url(url)
    server.start()
    try:
        first = client.enqueue("slow", retention=60)
        assert started.wait(10)
        r.replicaof("127.0.0.1", free_port(port + 1))  # a master that is not there: read-only until promoted
        with pytest.raises(EngineError, match="read only replica"):
            client.enqueue("quick")
        time.sleep(0.5)  # the idle fetch loop meets READONLY several times (idle_wait 0.1 s)
        release.set()  # the slow task succeeds while its ack cannot be written
        wait_for(lambda: first.id in runs, what="the slow handler returned")
        time.sleep(0.3)
        r.replicaof("NO", "ONE")

        wait_for(lambda: inspector.get_task("default", first.id).state == "completed",
                 what="the held-back ack written once Redis accepted writes")
        assert inspector.get_task("default", first.id).retried == 0
        later = client.enqueue("quick")
        wait_for(lambda: later.id in runs, what="the worker still fetching after the READONLY period")
    finally:
        release.set()
        server.stop()
        client.close()
        inspector.broker.close()
        r.close()
        for proc in servers:
            kill_process(proc)
        shutil.rmtree(data, ignore_errors=True)
