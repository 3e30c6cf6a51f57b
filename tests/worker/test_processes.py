"""Real worker processes: SIGKILL one of two workers mid-run and lose nothing. (Killing Redis itself, partitions
and poison tasks are in the chaos suite, tests/chaos.)

The workers are ``manage.py taskworker`` subprocesses with short leases from the environment; the handler
(``crash_tasks.record``) adds each task id to a Redis set when it runs to the end."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
import redis
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import Client, Inspector
from taskq.worker.recoverer import LEASE_EXPIRED

TASK = "test:record"
DONE_KEY = "test:done"  # crash_tasks.DONE_KEY (not imported: it would register its handler in this process)


def start_worker(
    processes: list[subprocess.Popen], redis_url: str, queue: str, log: Path, concurrency: int = 4, pool: str = "thread"
) -> subprocess.Popen:
    return start_taskworker(
        processes,
        redis_url,
        log,
        "--pool",
        pool,
        "--queues",
        queue,
        "--concurrency",
        str(concurrency),
        "--import",
        "tests.worker.crash_tasks",
    )


def servers_up(inspector: Inspector, procs: list[subprocess.Popen]) -> dict[int, object]:
    for proc in procs:
        assert proc.poll() is None, f"worker {proc.pid} exited with {proc.returncode}"
    found = {s.pid: s for s in inspector.servers()}
    return found if all(p.pid in found for p in procs) else {}


def logs(path: Path) -> str:
    return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-4000:]}" for f in sorted(path.glob("*.log")))


#: Each pool with the handler it runs here: the thread pool a sync one, the asyncio pool a coroutine.
ON_EACH_POOL = pytest.mark.parametrize(("pool", "task_type"), [("thread", TASK), ("asyncio", "test:arecord")])


@pytest.mark.slow
@ON_EACH_POOL
def test_sigkilled_worker_loses_no_task(r: redis.Redis, redis_url: str, processes, tmp_path: Path, pool, task_type):
    inspector = Inspector(redis_url)
    client = Client(redis_url)
    try:
        victim = start_worker(processes, redis_url, "crash", tmp_path / "victim.log", pool=pool)
        survivor = start_worker(processes, redis_url, "crash", tmp_path / "survivor.log", pool=pool)
        wait_for(lambda: servers_up(inspector, [victim, survivor]), timeout=30, what="both workers up")

        infos = client.enqueue_many([(task_type, {"sleep": 0.1})] * 200, queue="crash")
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

        wait_for(
            lambda: r.scard(DONE_KEY) == 200,
            timeout=30,
            what=f"all 200 tasks done (killed at {killed_at_done})\n{logs(tmp_path)}",
        )
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
