"""Fixtures of the HTTP API tests: the engine on the flushed test database, tokens, and a JSON client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from queues import conf
from queues.api import views
from queues.api.tokens import create_token


def clear_caches() -> None:
    conf._inspector.cache_clear()
    conf._client.cache_clear()
    views._consumer.cache_clear()


@pytest.fixture
def engine(settings_redis, redis_client):
    """Settings and every cached engine handle on the flushed test database; expired leases are recovered at
    once (no clock-skew allowance), so redelivery tests wait only for the TTR."""
    settings_redis.TASKS_API_RECOVERY_SKEW_SECONDS = 0.0
    clear_caches()
    yield redis_client
    clear_caches()


class Api:
    """The Django test client with a bearer token and JSON bodies: ``api.post(path, {...}).json()``."""

    def __init__(self, secret: str | None) -> None:
        self.client = Client()
        self.secret = secret

    def _headers(self, secret: str | None) -> dict[str, str]:
        secret = self.secret if secret is None else secret
        return {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}

    def get(self, path: str, secret: str | None = None, **params: Any) -> Any:
        return self.client.get(path, params, **self._headers(secret))

    def post(self, path: str, body: Any = None, secret: str | None = None) -> Any:
        data = b"" if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        return self.client.post(path, data, content_type="application/json", **self._headers(secret))

    def delete(self, path: str, secret: str | None = None) -> Any:
        return self.client.delete(path, **self._headers(secret))


@pytest.fixture
def make_token(db):
    def make(name: str = "svc", queues: list[str] | None = None, namespaces: list[str] | None = None) -> str:
        return create_token(name, ["*"] if queues is None and namespaces is None else (queues or []),
                            namespaces)[1]

    return make


@pytest.fixture
def api(engine, make_token) -> Api:
    """A client whose token may use every queue."""
    return Api(make_token("all", ["*"]))
