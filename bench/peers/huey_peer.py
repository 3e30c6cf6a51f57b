"""Huey with RedisHuey (blocking BRPOP reads, its default). The worker is
``huey_consumer bench.peers.huey_peer.huey -w N -k thread``: one process, N worker threads."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version

from huey import RedisHuey

from .. import work
from ..common import bench_url
from . import harness, stamp

huey = RedisHuey(harness.QUEUE, url=bench_url())


@huey.task(retries=0, name="bench.noop")
def noop() -> None:
    pass


@huey.task(retries=0, name="bench.stamp")
def stamp_task(seq: int) -> None:
    stamp.record(seq)


@huey.task(retries=0, name="bench.work")
def work_task(kind: str) -> None:
    work.run(kind)


def remaining(conn) -> int:
    # Huey keeps no record of a task once popped: in-flight tasks (at most N at the end) are not counted
    return int(conn.llen(f"huey.redis.{harness.QUEUE}"))


def consumer_cmd(n: int) -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "huey_consumer")
    return [sys.executable, exe, "bench.peers.huey_peer.huey", "-w", str(n), "-k", "thread", "-q"]


peer = harness.Peer(
    name="Huey",
    version=version("huey"),
    **harness.tasks(noop, stamp_task, work_task),
    worker_cmd=consumer_cmd,
    remaining=remaining,
    concurrency_note="1 process x N threads",
)
