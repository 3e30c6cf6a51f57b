"""taskiq with taskiq-redis's stream broker (``RedisStreamBroker``): tasks are entries of a Redis stream read by a
consumer group (XREADGROUP) and acknowledged with XACK after the task ran (``--ack-type when_saved``, taskiq's
default: after the result is saved; there is no result backend here, so right after the handler returns). An entry
delivered but never acknowledged stays in the group's pending list, and a worker reclaims it after
``idle_timeout`` (XAUTOCLAIM). The worker is
``taskiq worker bench.peers.taskiq_peer:broker --workers 1 --max-async-tasks N``: one worker process (beside
taskiq's supervising process) running up to N handlers at once on its event loop."""

from __future__ import annotations

from importlib.metadata import version

from taskiq_redis import RedisStreamBroker

from .. import work
from ..common import bench_url
from . import aio, harness, stamp

GROUP = "bench"
# consumer_id "0": the group reads the stream from its start, so tasks enqueued before the worker's first start
# are delivered (with taskiq-redis's default "$" a group made by the worker skips them)
broker = RedisStreamBroker(url=bench_url(), queue_name=harness.QUEUE, consumer_group_name=GROUP, consumer_id="0")


@broker.task(task_name="bench.noop")
async def noop() -> None:
    pass


@broker.task(task_name="bench.stamp")
async def stamp_task(seq: int) -> None:
    stamp.record(seq)


@broker.task(task_name="bench.work")
async def work_task(kind: str) -> None:
    await work.run_async(kind)


# The producer's broker start-up (its connection pool, the consumer group), once.
_ready = aio.once(broker.startup)


def enqueue_noops(n: int) -> None:
    _ready()
    aio.repeat(noop.kiq, n)


def prefill_work(kind: str, n: int) -> None:
    _ready()
    aio.repeat(lambda: work_task.kiq(kind), n)


def remaining(conn) -> int:
    return aio.stream_backlog(conn, harness.QUEUE, GROUP)


peer = harness.Peer(
    name="taskiq",
    version=f"{version('taskiq')}, taskiq-redis {version('taskiq-redis')}",
    enqueue_noop=lambda: enqueue_noops(1),
    enqueue_stamp=lambda seq: (_ready(), aio.call(stamp_task.kiq(seq))),
    enqueue_work=lambda kind: prefill_work(kind, 1),
    enqueue_noops=enqueue_noops,
    prefill_work=prefill_work,
    worker_cmd=harness.python_m(
        "taskiq worker bench.peers.taskiq_peer:broker --workers 1 --max-async-tasks {n} --ack-type when_saved"
        " --log-level WARNING"
    ),
    remaining=remaining,
    concurrency_note="1 worker process, up to N async tasks",
)
