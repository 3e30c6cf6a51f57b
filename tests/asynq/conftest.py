"""Fixtures of the asynq interoperability tests: ``go`` runs real Go asynq on the test's Redis database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

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
