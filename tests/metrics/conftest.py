"""Fixtures of the metrics tests."""

from __future__ import annotations

import pytest

from queues import conf
from queues.engine import Client


@pytest.fixture
def engine(settings_redis, redis_client, redis_url):
    """A client on the flushed test database, with the console's cached client and inspector pointed at it too."""
    conf._client.cache_clear()
    conf._inspector.cache_clear()
    yield Client(redis_url)
    conf._client.cache_clear()
    conf._inspector.cache_clear()
