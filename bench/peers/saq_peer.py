"""SAQ with its Redis queue: a worker takes a job by moving its id from the ``queued`` list to the ``active`` list
(BLMOVE, one atomic step), runs it, and only then removes it from ``active``. A job left in ``active`` by a worker
that died is found by the sweep once its ``timeout`` (10 s by default) has passed and is retried or aborted. That
is SAQ's only mode: nothing to turn on. Finished jobs are deleted (``ttl=-1``: taskq deletes a finished task too;
SAQ's default keeps them 600 s). The worker is ``python -m saq bench.peers.saq_peer.settings``: one process, one
event loop, ``concurrency`` N (taken from ``BENCH_CONCURRENCY``, which the harness sets for the worker it
starts)."""

from __future__ import annotations

import os
from importlib.metadata import version

from saq import Queue

from .. import work
from ..common import bench_url
from . import aio, harness, stamp

queue = Queue.from_url(bench_url(), name=harness.QUEUE)


async def noop(ctx) -> None:
    pass


async def stamp_task(ctx, *, seq: int) -> None:
    stamp.record(seq)


async def work_task(ctx, *, kind: str) -> None:
    await work.run_async(kind)


settings = {
    "queue": queue,
    "functions": [noop, stamp_task, work_task],
    "concurrency": int(os.environ.get("BENCH_CONCURRENCY", "10")),
}

JOB = {"ttl": -1}  # delete the job's record when it finishes


def enqueue_noops(n: int) -> None:
    aio.repeat(lambda: queue.enqueue("noop", **JOB), n)


def prefill_work(kind: str, n: int) -> None:
    aio.repeat(lambda: queue.enqueue("work_task", kind=kind, **JOB), n)


def remaining(conn) -> int:
    pipe = conn.pipeline(transaction=False)
    pipe.llen(queue.namespace("queued"))
    pipe.llen(queue.namespace("active"))
    return sum(pipe.execute())


peer = harness.Peer(
    name="SAQ",
    version=version("saq"),
    enqueue_noop=lambda: enqueue_noops(1),
    enqueue_stamp=lambda seq: aio.call(queue.enqueue("stamp_task", seq=seq, **JOB)),
    enqueue_work=lambda kind: prefill_work(kind, 1),
    enqueue_noops=enqueue_noops,
    prefill_work=prefill_work,
    worker_cmd=harness.python_m("saq bench.peers.saq_peer.settings --quiet"),
    remaining=remaining,
    concurrency_note="1 process, one event loop, concurrency N",
)
