"""Helpers of the worker tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from taskq.queues.engine import Keys, Registry
from taskq.worker import spark_submit
from taskq.worker.server import Server

# One way to wait, shared by every suite that runs workers.
from tests.waiting import WAIT, state_of, wait_for  # noqa: F401 - the suites import them from here

#: The pools a module's tests run on when it parametrises ``worker_pool`` (see conftest.py): each test then holds
#: on the thread pool and on the asyncio pool (worker/asyncio_pool/).
POOLS = ("thread", "asyncio")


@contextmanager
def running_servers() -> Iterator[Callable[[Server], Server]]:
    """``start(server)`` starts a worker server and returns it; every server started so is stopped, newest first,
    when the block ends (a fixture's teardown)."""
    started: list[Server] = []

    def start(server: Server) -> Server:
        server.start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in reversed(started):
            server.stop()


def listening_for_cancels(r: redis.Redis) -> None:
    """Wait until a worker listens on the cancel channel of ``r``'s database, so an operator's cancel reaches it."""
    channel = Keys().cancel_channel(r.connection_pool.connection_kwargs.get("db", 0))
    wait_for(lambda: r.pubsub_numsub(channel)[0][1] >= 1, what="the worker listening for cancellations")


FAST = dict(
    concurrency=4,
    lease_seconds=2.0,
    heartbeat_interval=0.2,
    recoverer_interval=0.3,
    clock_skew=0.2,
    forwarder_interval=0.1,
    janitor_interval=0.2,
    shutdown_timeout=0.5,
    idle_wait=0.2,
)


# -- processes ------------------------------------------------------------------------------------------------


def kill_process(proc: subprocess.Popen, term_timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it does not exit; only the process we started."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(term_timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


ROOT = Path(__file__).resolve().parents[2]


def start_taskworker(
    processes: list[subprocess.Popen], redis_url: str, log: Path, *args: str, **env: str
) -> subprocess.Popen:
    """``manage.py taskworker <args>`` on ``redis_url``, with short intervals (and the variables ``env``) and its
    output in ``log``; added to ``processes`` (the fixture kills what is left at teardown)."""
    out = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "taskworker", *args],
        cwd=ROOT,
        env=worker_env(redis_url, **env),
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    processes.append(proc)
    return proc


def worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "REDIS_URL": redis_url,
            "TASKS_LEASE_SECONDS": "2",
            "TASKS_RECOVERER_SECONDS": "0.5",
            "TASKS_CLOCK_SKEW_SECONDS": "0.2",
            "TASKS_FORWARDER_SECONDS": "0.2",
            "TASKS_SHUTDOWN_TIMEOUT": "2",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def spark_submit_registry() -> Registry:
    """A registry with the built-in ``spark:submit`` handler registered again, with no retry delay (so a failed
    submission is retried at once rather than after the default backoff)."""
    reg = Registry()
    builtin = spark_submit.submit
    reg.add(type(builtin)(builtin.type, builtin.func, builtin.defaults, lambda *_: 0))
    return reg
