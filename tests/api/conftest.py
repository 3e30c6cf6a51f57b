"""Fixtures of the HTTP API tests: the engine on the flushed test database, tokens, and a JSON client."""

from __future__ import annotations

import pytest
from api_support import Api, clear_caches

from taskq.queues.api.tokens import create_token


@pytest.fixture
def engine(settings_redis, redis_client):
    """Settings and every cached engine handle on the flushed test database; expired leases are recovered at
    once (no clock-skew allowance), so redelivery tests wait only for the TTR."""
    settings_redis.TASKS_API_RECOVERY_SKEW_SECONDS = 0.0
    clear_caches()
    yield redis_client
    clear_caches()


@pytest.fixture
def make_token(db):
    def make(name: str = "svc", queues: list[str] | None = None, namespaces: list[str] | None = None) -> str:
        return create_token(name, ["*"] if queues is None and namespaces is None else (queues or []), namespaces)[1]

    return make


@pytest.fixture
def api(engine, make_token) -> Api:
    """A client whose token may use every queue."""
    return Api(make_token("all", ["*"]))
