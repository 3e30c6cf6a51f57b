"""Dramatiq with its Redis broker. The worker is ``dramatiq <this module> --processes 1 --threads N``."""

from __future__ import annotations

from importlib.metadata import version

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from .. import work
from ..common import bench_url
from . import harness, stamp

broker = RedisBroker(url=bench_url())
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name=harness.QUEUE, max_retries=0)
def noop() -> None:
    pass


@dramatiq.actor(queue_name=harness.QUEUE, max_retries=0)
def stamp_task(seq: int) -> None:
    stamp.record(seq)


@dramatiq.actor(queue_name=harness.QUEUE, max_retries=0)
def work_task(kind: str) -> None:
    work.run(kind)


def remaining(conn) -> int:
    # message ids wait in the list; message bodies stay in the .msgs hash until acked
    return int(conn.hlen(f"dramatiq:{harness.QUEUE}.msgs"))


peer = harness.Peer(
    name="Dramatiq",
    version=version("dramatiq"),
    **harness.tasks(noop.send, stamp_task.send, work_task.send),
    worker_cmd=harness.python_m("dramatiq bench.peers.dramatiq_peer --processes 1 --threads {n} --queues {queue}"),
    remaining=remaining,
    concurrency_note="1 process x N threads",
)
