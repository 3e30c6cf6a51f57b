"""The Redis connection of the handler modules that worker subprocesses import (crash_tasks, limit_tasks): the
worker's own REDIS_URL, opened once per process on first use."""

from __future__ import annotations

import os

import redis

_conn: redis.Redis | None = None


def conn() -> redis.Redis:
    global _conn
    if _conn is None:
        _conn = redis.Redis.from_url(os.environ["REDIS_URL"], socket_connect_timeout=2, socket_timeout=5)
    return _conn
