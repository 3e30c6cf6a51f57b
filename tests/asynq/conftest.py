"""Fixtures of the asynq interoperability tests: ``go`` runs real Go asynq on the test's Redis database."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.worker.worker_support import kill_process, start_taskworker

from . import go_asynq


class Go:
    """Go asynq on one Redis database: ``go("task", queue, id)``, ``go.enqueue({...})``, ``go.serving(...)``."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url

    def __call__(self, *args: str) -> Any:
        return go_asynq.run(self.redis_url, *args)

    def enqueue(self, spec: dict[str, Any]) -> dict[str, Any]:
        return go_asynq.run(self.redis_url, "enqueue", stdin=spec)

    def serving(self, *args: str):
        return go_asynq.running(self.redis_url, "serve", *args)

    def scheduling(self, *args: str):
        return go_asynq.running(self.redis_url, "schedule", *args)

    def runs(self, client: redis.Redis) -> list[tuple[str, str, int, str]]:
        """Every handler start either side recorded: (side, task id, retry count, server name)."""
        out = []
        for raw in client.lrange("interop:runs", 0, -1):
            side, task_id, retried, name = raw.decode().split("|", 3)
            out.append((side, task_id, int(retried), name))
        return out


@pytest.fixture(scope="session")
def go_binary() -> str:
    return str(go_asynq.binary())


@pytest.fixture
def go(go_binary: str, r: redis.Redis, redis_url: str) -> Iterator[Go]:
    yield Go(redis_url)


#: The Python worker's timings in these tests: a short lease, recoverer, forwarder and janitor, so what asynq
#: does in seconds or minutes happens in a fraction of one (Go's own timings stay asynq's).
PY_WORKER_ENV = {
    "TASKS_KEY_FORMAT": "asynq",
    "TASKS_LEASE_SECONDS": "2",
    "TASKS_RECOVERER_SECONDS": "0.5",
    "TASKS_CLOCK_SKEW_SECONDS": "0.2",
    "TASKS_FORWARDER_SECONDS": "0.2",
    "TASKS_JANITOR_SECONDS": "0.3",
    "TASKS_SHUTDOWN_TIMEOUT": "2",
}


@pytest.fixture
def py_worker(redis_url: str, tmp_path) -> Iterator[Any]:
    """``py_worker("--queues", "default=1", name="p1", **env)`` starts ``manage.py taskworker`` on asynq's keys of
    the test's database, with the handlers of ``py_handlers`` and short timings; each is stopped at teardown (SIGTERM,
    then SIGKILL), unless the test killed it already."""
    processes: list[subprocess.Popen] = []

    def start(*args: str, name: str = "py", **env: str) -> subprocess.Popen:
        log = tmp_path / f"worker-{name}-{len(processes)}.log"
        return start_taskworker(
            processes,
            redis_url,
            log,
            *args,
            "--import",
            "tests.asynq.py_handlers",
            **{**PY_WORKER_ENV, "INTEROP_NAME": name, **env},
        )

    yield start
    for proc in processes:
        kill_process(proc)
