"""BullMQ, the Node queue, for comparison with a runtime without a GIL: ``bullmq_peer.cjs`` run with ``node`` from a
throwaway folder with ``npm install bullmq ioredis`` (``$BENCH_BULLMQ_DIR``, default /tmp/bench-bullmq; see
bench/README.md). A worker moves a job from ``wait`` to ``active`` under a lock that it renews, and
``moveToFinished`` removes it once the handler returned; a job whose lock lapsed (its worker died) is found stalled
and moved back to wait. That is BullMQ's only mode. Finished jobs are removed (``removeOnComplete``). The worker is
``node bullmq_peer.cjs worker N``: one Node process, one ``Worker`` with concurrency N."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ..common import bench_url
from . import harness

SCRIPT = Path(__file__).with_name("bullmq_peer.cjs")
DIR = Path(os.environ.get("BENCH_BULLMQ_DIR", "/tmp/bench-bullmq"))
MODULES = DIR / "node_modules"


def available() -> bool:
    return (MODULES / "bullmq").is_dir()


def _version() -> str:
    try:
        return str(json.loads((MODULES / "bullmq" / "package.json").read_text())["version"])
    except OSError:
        return "not installed"


def _argv(*args: object) -> list[str]:
    if not available():
        raise SystemExit(f"BullMQ is not installed in {DIR}: mkdir -p {DIR} && cd {DIR} && npm install bullmq ioredis")
    return ["node", str(SCRIPT), *map(str, args)]


def _node(*args: object) -> str:
    env = {**os.environ, "NODE_PATH": str(MODULES), "BENCH_REDIS_URL": bench_url()}
    done = subprocess.run(_argv(*args), env=env, capture_output=True, text=True, check=True, timeout=600)
    return done.stdout


def life_producer(n: int, batch: int) -> subprocess.Popen:
    """``bullmq_peer.cjs life``: a producer that warms up, prints "ready", and adds ``n`` jobs ``batch`` at a time
    once it reads a line on its stdin (bench/redis_life.py)."""
    env = {**os.environ, "NODE_PATH": str(MODULES), "BENCH_REDIS_URL": bench_url()}
    return subprocess.Popen(_argv("life", n, batch), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def prefill_work(kind: str, n: int) -> None:
    _node("prefill", kind, n)


def timed_enqueue(n: int) -> float:
    return float(json.loads(_node("enqueue", n).strip().splitlines()[-1])["seconds"])


def worker_cmd(n: int) -> list[str]:
    # node finds the modules through NODE_PATH, which env sets for the worker (the harness adds BENCH_REDIS_URL)
    return ["env", f"NODE_PATH={MODULES}", *_argv("worker", n)]


def remaining(conn) -> int:
    pipe = conn.pipeline(transaction=False)
    pipe.llen(f"bull:{harness.QUEUE}:wait")
    pipe.llen(f"bull:{harness.QUEUE}:active")
    return sum(pipe.execute())


def _no_latency(seq: int) -> None:
    raise SystemExit("the BullMQ peer measures processing and enqueue only")


peer = harness.Peer(
    name="BullMQ",
    version=f"{_version()} (Node {os.popen('node --version').read().strip() or '?'})",
    enqueue_noop=lambda: prefill_work("noop", 1),
    enqueue_stamp=_no_latency,
    enqueue_work=lambda kind: prefill_work(kind, 1),
    prefill_work=prefill_work,
    timed_enqueue=timed_enqueue,
    worker_cmd=worker_cmd,
    remaining=remaining,
    concurrency_note="1 Node process, one Worker, concurrency N",
)
