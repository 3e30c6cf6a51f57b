"""Celery with its Redis broker (kombu's Redis transport), no result backend. The worker is
``celery -A bench.peers.celery_peer worker -P threads -c N``: one process, a pool of N threads (prefork would be
N processes)."""

from __future__ import annotations

from importlib.metadata import version

from celery import Celery

from .. import work
from ..common import bench_url
from . import harness, stamp

app = Celery("bench", broker=bench_url())
app.conf.update(
    task_default_queue=harness.QUEUE,
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(name="bench.noop")
def noop() -> None:
    pass


@app.task(name="bench.stamp")
def stamp_task(seq: int) -> None:
    stamp.record(seq)


@app.task(name="bench.work")
def work_task(kind: str) -> None:
    work.run(kind)


def remaining(conn) -> int:
    # waiting messages are in the queue's list; prefetched ones in the "unacked" hash until the pool takes them
    pipe = conn.pipeline(transaction=False)
    pipe.llen(harness.QUEUE)
    pipe.hlen("unacked")
    return sum(pipe.execute())


peer = harness.Peer(
    name="Celery",
    version=version("celery"),
    **harness.tasks(noop.delay, stamp_task.delay, work_task.delay),
    worker_cmd=harness.python_m(
        "celery -A bench.peers.celery_peer worker -P threads -c {n} -Q {queue} -l warning"
        " --without-gossip --without-mingle --without-heartbeat"
    ),
    remaining=remaining,
    concurrency_note="1 process, thread pool of N",
)
