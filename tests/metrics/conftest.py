"""Fixtures of the metrics tests."""

from __future__ import annotations

import pytest

from taskq.queues import handles
from taskq.queues.engine import Client


@pytest.fixture
def engine(settings_redis, redis_client, redis_url):
    """A client on the flushed test database, with the console's cached client and inspector pointed at it too."""
    handles.reset()
    yield Client(redis_url)
    handles.reset()
