"""streaq: tasks are entries of a Redis stream per priority, read by the consumer group ``workers``; a task's entry
is acknowledged and deleted (XACK, XDEL) in the transaction that records its end, after the handler returned. An
entry whose worker stops sending its health beat is reclaimed by another worker once ``idle_timeout`` (60 s) has
passed. That is its only mode: nothing to turn on. Results are not kept (``ttl=0``: taskq deletes a finished task
too) and the per-task log lines are off (``silent=True``). The worker is
``python -m streaq run bench.peers.streaq_peer:worker``: one process, one event loop, ``concurrency`` N (taken from
``BENCH_CONCURRENCY``, which the harness sets for the worker it starts)."""

from __future__ import annotations

import os
from importlib.metadata import version

from streaq import Worker

from .. import work
from ..common import bench_url
from . import aio, harness, stamp

worker = Worker(
    redis_url=bench_url(),
    queue_name=harness.QUEUE,
    concurrency=int(os.environ.get("BENCH_CONCURRENCY", "16")),
)


@worker.task(name="bench.noop", ttl=0, silent=True)
async def noop() -> None:
    pass


@worker.task(name="bench.stamp", ttl=0, silent=True)
async def stamp_task(seq: int) -> None:
    stamp.record(seq)


@worker.task(name="bench.work", ttl=0, silent=True)
async def work_task(kind: str) -> None:
    await work.run_async(kind)


# The producer enters the worker's context once (its connection, the Lua library), as streaq's docs show.
_ready = aio.once(worker.__aenter__)


async def _enqueue(registered, *args):
    return await registered.enqueue(*args)


def enqueue_noops(n: int) -> None:
    _ready()
    aio.repeat(lambda: _enqueue(noop), n)


def prefill_work(kind: str, n: int) -> None:
    _ready()
    aio.repeat(lambda: _enqueue(work_task, kind), n)


def remaining(conn) -> int:
    # a finished task's entry is deleted from its stream, so what the streams hold is what is left
    pipe = conn.pipeline(transaction=False)
    for priority in worker.priorities:
        pipe.xlen(worker.stream_key + priority)
    return sum(pipe.execute())


peer = harness.Peer(
    name="streaq",
    version=version("streaq"),
    enqueue_noop=lambda: enqueue_noops(1),
    enqueue_stamp=lambda seq: (_ready(), aio.call(_enqueue(stamp_task, seq))),
    enqueue_work=lambda kind: prefill_work(kind, 1),
    enqueue_noops=enqueue_noops,
    prefill_work=prefill_work,
    worker_cmd=harness.python_m("streaq run bench.peers.streaq_peer:worker"),
    remaining=remaining,
    concurrency_note="1 process, one event loop, concurrency N",
)
