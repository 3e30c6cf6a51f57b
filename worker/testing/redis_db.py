"""Which Redis database tests may write to and flush."""

from __future__ import annotations

import os

import redis

from queues.engine import ValidationError

#: Used when neither the ``--taskq-redis-url`` option nor ``$TASKQ_TEST_REDIS_URL`` names one.
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/9"


def database_of(url: str) -> int:
    """The database a Redis URL selects. redis-py parses it, so "/9", "?db=9" and unix sockets mean what they
    mean to the client."""
    return int(redis.connection.parse_url(url).get("db", 0) or 0)  # type: ignore[no-untyped-call]


def test_redis_url(url: str | None = None, allowed: range | None = None) -> str:
    """``url``, else ``$TASKQ_TEST_REDIS_URL``, else ``DEFAULT_TEST_REDIS_URL``. Tests flush this database, so
    database 0, where an application's real data usually lives, is refused with a ValidationError, and so is one
    outside ``allowed`` when given (taskq's own suite allows 1-9 only: 10-15 belong to other tools)."""
    url = url or os.environ.get("TASKQ_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    db = database_of(url)
    if db == 0:
        raise ValidationError(
            f"the test Redis URL {url!r} selects database 0; tests flush their database, so give "
            "one set aside for them (e.g. redis://127.0.0.1:6379/9)",
            op="taskq.testing",
        )
    if allowed is not None and db not in allowed:
        raise ValidationError(
            f"the test Redis URL {url!r} selects database {db}; use one between {allowed.start} and {allowed.stop - 1}",
            op="taskq.testing",
        )
    return url


# Not a test, whatever its name says: keep pytest from collecting it where a test module imports it.
test_redis_url.__test__ = False  # type: ignore[attr-defined]
