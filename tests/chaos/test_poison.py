"""A poison task kills the worker process that runs it, every time (SIGKILL of its own process, like a segfault or
the OOM killer). A supervisor in the test restarts dead workers, as systemd would. Each crash is recovered after
the lease and counts as an attempt (the recoverer's retry increments the retry count), so the poison task ends in
the archive after its retries instead of killing workers forever, and the rest of the queue keeps flowing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from chaos_support import Supervisor, completions, logs, record_figures, scale, start_worker, state_of, wait_for

from taskq.queues.engine import Client, Inspector
from taskq.worker.recoverer import LEASE_EXPIRED

pytestmark = pytest.mark.chaos

QUEUE = "poison"
MAX_RETRY = 2


def test_a_task_that_kills_its_worker_is_archived_after_its_retries_and_the_queue_keeps_flowing(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
):
    done_file = tmp_path / "done.txt"
    client, inspector = Client(redis_url), Inspector(redis_url)
    supervisor = Supervisor(lambda n: start_worker(redis_url, QUEUE, done_file, tmp_path / f"worker-{n}.log"), 2)
    try:
        began = time.monotonic()
        poison = client.enqueue("chaos:poison", queue=QUEUE, max_retry=MAX_RETRY)
        ids = [client.enqueue("chaos:record", {"sleep": 0.05}, queue=QUEUE).id for _ in range(scale(60))]

        wait_for(
            lambda: state_of(inspector, QUEUE, poison.id) == "archived",
            timeout=90,
            interval=0.1,
            what=f"the poison task archived (restarts so far: {supervisor.exits})\n{logs(tmp_path)}",
        )
        archived_after = time.monotonic() - began
        task = inspector.get_task(QUEUE, poison.id)
        # One run and MAX_RETRY retries, each ended by the crash and counted when its lease was recovered.
        assert task.retried == MAX_RETRY + 1
        assert task.last_error == LEASE_EXPIRED
        assert supervisor.exits == [-9] * (MAX_RETRY + 1), "each run of the poison task killed one worker"

        wait_for(
            lambda: set(completions(done_file)) >= set(ids),
            timeout=60,
            interval=0.1,
            what=f"every other task completed\n{logs(tmp_path)}",
        )

        def settled():
            info = inspector.queue_info(QUEUE)
            return (info.pending, info.active, info.scheduled, info.retry, info.archived) == (0, 0, 0, 0, 1)

        wait_for(settled, what="nothing left but the archived poison task")
        assert all(proc.poll() is None for proc in supervisor.procs), "a worker died without the poison task"
        runs = completions(done_file)
        record_figures(
            "poison task (kills its worker; max_retry 2), 2 supervised workers",
            enqueued=len(ids) + 1,
            completed=len(runs),
            lost=len(set(ids) - set(runs)),
            duplicated=sum(n - 1 for n in runs.values()),
            crashes=supervisor.restarts,
            archived_after_s=round(archived_after, 1),
        )
    finally:
        supervisor.stop()
        client.close()
        inspector.broker.close()
