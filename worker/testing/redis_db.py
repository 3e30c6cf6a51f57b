"""Which Redis database tests may write to and flush."""

from __future__ import annotations

import os

import redis

from queues.engine import ValidationError

#: Used when neither the ``--taskq-redis-url`` option nor ``$TASKQ_TEST_REDIS_URL`` names one.
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/9"


def test_redis_url(url: str | None = None) -> str:
    """``url``, else ``$TASKQ_TEST_REDIS_URL``, else ``DEFAULT_TEST_REDIS_URL``. Tests flush this database, so
    database 0, where an application's real data usually lives, is refused with a ValidationError."""
    url = url or os.environ.get("TASKQ_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    # redis-py parses the URL, so "/9", "?db=9" and unix sockets mean what they mean to the client.
    db = int(redis.connection.parse_url(url).get("db", 0) or 0)  # type: ignore[no-untyped-call]
    if db == 0:
        raise ValidationError(
            f"the test Redis URL {url!r} selects database 0; tests flush their database, so give "
            "one set aside for them (e.g. redis://127.0.0.1:6379/9)",
            op="taskq.testing",
        )
    return url


# Not a test, whatever its name says: keep pytest from collecting it where a test module imports it.
test_redis_url.__test__ = False  # type: ignore[attr-defined]
