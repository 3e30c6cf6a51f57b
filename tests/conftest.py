"""Shared fixtures: a real Redis on a test database, flushed around each test.

Tests use TEST_REDIS_URL (default redis://127.0.0.1:6379/9). Only databases 1-9 are allowed: db 0 holds the
demo's data and 10-15 are left to other tools, and a FLUSHDB there would destroy someone's state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from console.channel_layers import channel_layers

DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/9"


def _redis_db(url: str) -> int:
    # Let redis-py parse the URL so "/9", "?db=9" and unix sockets mean what they mean to the client.
    kwargs = redis.connection.parse_url(url)
    return int(kwargs.get("db", 0) or 0)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis URL tests may write to and flush."""
    url = os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    db = _redis_db(url)
    assert 1 <= db <= 9, f"TEST_REDIS_URL must select a database between 1 and 9, got db {db} in {url!r}"
    return url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on the test database, empty at the start of the test and flushed again at the end."""
    client = redis.Redis.from_url(redis_url)
    try:
        client.flushdb()
    except redis.ConnectionError as exc:
        pytest.fail(f"no Redis at {redis_url} ({exc}); start one with: bash scripts/ensure-redis.sh {redis_url}")
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def settings_redis(settings, redis_url: str):
    """Django settings whose REDIS_URL (and the Redis-backed layers derived from it) use the test database."""
    settings.REDIS_URL = redis_url
    settings.CHANNEL_LAYERS = channel_layers(redis_url)
    settings.RQ_QUEUES = {"default": {"URL": redis_url}}
    return settings
