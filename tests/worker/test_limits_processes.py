"""Queue limits across real worker processes: two ``manage.py taskworker`` processes serve one queue whose
definition caps it or rate-limits it, and the limit holds for both together.

Nothing here is timed. The cap is checked on a peak that the handlers keep in Redis atomically; the rate limit on
the start times of the queue's events, which are the times the dequeue script judged the window by."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import redis
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import Client, Inspector, Keys
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec

TASK = "test:limited"
PEAK, DONE = "test:peak", "test:done"  # limit_tasks (not imported: it would register its handler here)


def two_workers(processes: list[subprocess.Popen], redis_url: str, queue: str, tmp_path: Path) -> None:
    inspector = Inspector(redis_url)
    try:
        procs = [
            start_taskworker(
                processes,
                redis_url,
                tmp_path / f"worker-{n}.log",
                "--queues",
                queue,
                "--concurrency",
                "4",
                "--import",
                "tests.worker.limit_tasks",
            )
            for n in range(2)
        ]

        def both_up() -> bool:
            for proc in procs:
                assert proc.poll() is None, f"worker {proc.pid} exited:\n{logs(tmp_path)}"
            return {p.pid for p in procs} <= {s.pid for s in inspector.servers()}

        wait_for(both_up, timeout=30, what="both workers up")
    finally:
        inspector.broker.close()


def logs(path: Path) -> str:
    return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}" for f in sorted(path.glob("*.log")))


def enqueue(redis_url: str, queue: str, n: int, sleep: float) -> set[str]:
    client = Client(redis_url)
    try:
        return {
            info.id for info in client.enqueue_many([(TASK, {"sleep": sleep, "n": i}) for i in range(n)], queue=queue)
        }
    finally:
        client.close()


@pytest.mark.slow
def test_a_concurrency_cap_holds_across_two_worker_processes(r: redis.Redis, redis_url, processes, tmp_path):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={"capped": QueueSpec("capped", concurrency_cap=3)}))
    two_workers(processes, redis_url, "capped", tmp_path)
    ids = enqueue(redis_url, "capped", 24, sleep=0.2)
    wait_for(lambda: r.scard(DONE) == len(ids), timeout=60, what=f"every task done\n{logs(tmp_path)}")
    # 8 handler slots against a cap of 3: the peak reaches the cap (a dequeue takes 3 at once, and each runs
    # 0.2 s) and never passes it.
    assert int(r.get(PEAK)) == 3, f"peak {int(r.get(PEAK))} against a cap of 3\n{logs(tmp_path)}"


@pytest.mark.slow
def test_a_rate_limit_holds_across_two_worker_processes(r: redis.Redis, redis_url, processes, tmp_path):
    limit, period_ms = 4, 1000
    PolicyStore(Broker(conn=r)).write(
        PolicySet(queues={"rated": QueueSpec("rated", rate_limit=limit, rate_period=1.0)})
    )
    two_workers(processes, redis_url, "rated", tmp_path)
    ids = enqueue(redis_url, "rated", 14, sleep=0.0)
    wait_for(lambda: r.scard(DONE) == len(ids), timeout=60, what=f"every task done\n{logs(tmp_path)}")
    starts = sorted(int(f[b"at"]) for _, f in r.xrange(Keys().queue("rated").events) if f[b"to"] == b"active")
    assert len(starts) == len(ids)
    in_window = [sum(1 for t in starts if s - period_ms < t <= s) for s in starts]
    assert max(in_window) == limit  # used to the full, never passed
    # 14 starts at 4 per second need four windows: the last start is at least three periods after the first.
    assert starts[-1] - starts[0] >= 3 * period_ms
    # Tasks over the limit waited in pending: none went through retry.
    assert b"retry" not in {f[b"to"] for _, f in r.xrange(Keys().queue("rated").events)}
