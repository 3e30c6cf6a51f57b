"""Fixtures for the CLI tests: the CLI pointed at the flushed test database, and a seeder of tasks."""

from __future__ import annotations

import pytest

from taskq.queues import handles

from .helpers import Seed, invoke


@pytest.fixture
def cli(settings, redis_url, redis_client):
    """Run ``tasks <argv>`` in-process against the flushed test database: ``cli("queue", "ls")``."""
    settings.REDIS_URL = redis_url
    # The shared Client remembers for a few seconds which queues it registered in the queue set; the flush
    # between tests erases the set behind its back, so each test starts with a fresh one.
    handles.reset()
    return invoke


@pytest.fixture
def seed(redis_url, redis_client):
    seeder = Seed(redis_url)
    yield seeder
    seeder.close()
