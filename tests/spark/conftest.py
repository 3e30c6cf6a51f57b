"""Fixtures of the Spark tests: one local Spark session for the whole run (``local[1]``, UI off, two shuffle
partitions), servers on the test database whose Spark tasks use it, and a client and inspector.

Servers run on the real clock: Spark jobs take real time, and timeouts are real timeouts here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from spark_support import FAST, LOCAL_CONF

from taskq.queues.engine import Client, Inspector, Registry
from taskq.queues.sparkconf import SparkSettings, build_session
from tests.worker.worker_support import running_servers
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server
from taskq.worker.spark import SparkRunner

# py4j logs "Closing down clientserver connection" from __del__, after pytest closed its capture streams.
logging.getLogger("py4j").setLevel(logging.WARNING)

LOCAL = SparkSettings(master="local[1]", app_name="taskq-tests", conf=LOCAL_CONF)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = build_session(LOCAL)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def client(r: redis.Redis, redis_url: str) -> Iterator[Client]:
    """A taskq Client on the real clock, like the servers here."""
    with Client(redis_url) as c:
        yield c


@pytest.fixture
def inspector(r: redis.Redis, redis_url: str) -> Iterator[Inspector]:
    """On the real clock, not the root's fixed instant: Spark jobs take real time."""
    i = Inspector(redis_url, actor="test")
    yield i
    i.broker.close()


@pytest.fixture
def make_server(r: redis.Redis, redis_url: str, registry: Registry, spark: Any) -> Iterator[Callable[..., Server]]:
    """``make_server(**config)``: a started Server whose Spark tasks run on the shared session."""

    def build(**overrides: Any) -> Server:
        server = Server(WorkerConfig(redis_url=redis_url, spark=LOCAL, **{**FAST, **overrides}), registry)
        server.spark = server.processor.spark = SparkRunner(LOCAL, session=spark, progress_interval=0.2)
        return server

    with running_servers() as start:
        yield lambda **overrides: start(build(**overrides))
