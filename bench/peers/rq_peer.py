"""RQ. It has no threads: one worker runs one job at a time. Two workers are measured:
``peer``: ``rq worker -w rq.worker.SimpleWorker`` (runs jobs in its own process), and
``peer_fork``: plain ``rq worker`` (RQ's default, forks a child per job). Bulk: ``Queue.enqueue_many``."""

from __future__ import annotations

import sys
from importlib.metadata import version

import redis
from rq import Queue
from rq.registry import StartedJobRegistry

from .. import work
from ..common import bench_url
from . import harness, stamp

conn = redis.Redis.from_url(bench_url())
queue = Queue(harness.QUEUE, connection=conn)
started = StartedJobRegistry(queue=queue)


def noop() -> None:
    pass


def stamp_task(seq: int) -> None:
    stamp.record(seq)


def work_task(kind: str) -> None:
    work.run(kind)


def enqueue_noop():
    return queue.enqueue(noop)


def bulk(n: int):
    return queue.enqueue_many([Queue.prepare_data(noop) for _ in range(n)])


def remaining(c) -> int:
    pipe = c.pipeline(transaction=False)
    pipe.llen(queue.key)
    pipe.zcard(started.key)
    return sum(pipe.execute())


def worker_cmd(worker_class: str | None):
    def cmd(n: int) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "rq.cli",
            "worker",
            "--url",
            bench_url(),
            "--logging_level",
            "WARNING",
            harness.QUEUE,
        ]
        if worker_class:
            argv[4:4] = ["-w", worker_class]
        return argv

    return cmd


def _peer(name: str, worker_class: str | None, note: str) -> harness.Peer:
    return harness.Peer(
        name=name,
        version=version("rq"),
        **harness.tasks(
            enqueue_noop, lambda seq: queue.enqueue(stamp_task, seq), lambda kind: queue.enqueue(work_task, kind)
        ),
        worker_cmd=worker_cmd(worker_class),
        remaining=remaining,
        bulk=bulk,
        fixed_concurrency=1,
        concurrency_note=note,
    )


peer = _peer("RQ", "rq.worker.SimpleWorker", "SimpleWorker: 1 process, 1 job at a time, no fork")
peer_fork = _peer("RQ-fork", None, "default Worker: forks a child per job, 1 job at a time")
