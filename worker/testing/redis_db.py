"""Which Redis database tests may write to and flush."""

from __future__ import annotations

import os
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from taskq.queues.engine import ValidationError
from taskq.queues.engine.quoting import shown

#: Used when neither the ``--taskq-redis-url`` option nor ``$TASKQ_TEST_REDIS_URL`` names one.
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/9"


def database_of(url: str) -> int:
    """The database a Redis URL selects, read as redis-py reads it: ``?db=`` wins, then the path of a
    ``redis://``/``rediss://`` URL ("/9"); a unix socket's path is the socket's, so only ``?db=`` selects there."""
    parts = urlsplit(url)
    given = parse_qs(parts.query).get("db")
    if given:
        return int(given[-1])
    path = parts.path.strip("/")
    return int(path) if parts.scheme in ("redis", "rediss") and path else 0


def test_redis_url(url: str | None = None, allowed: range | None = None) -> str:
    """``url``, else ``$TASKQ_TEST_REDIS_URL``, else ``DEFAULT_TEST_REDIS_URL``. Tests flush this database, so
    database 0, where an application's real data usually lives, is refused with a ValidationError, and so is one
    outside ``allowed`` when given (taskq's own suite allows 1-9 only: 10-15 belong to other tools)."""
    url = url or os.environ.get("TASKQ_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    db = database_of(url)
    if db == 0:
        raise ValidationError(
            f"the test Redis URL {shown(url)} selects database 0; tests flush their database, so give "
            "one set aside for them (e.g. redis://127.0.0.1:6379/9)",
            op="taskq.testing",
        )
    if allowed is not None and db not in allowed:
        raise ValidationError(
            f"the test Redis URL {shown(url)} selects database {db}; "
            f"use one between {allowed.start} and {allowed.stop - 1}",
            op="taskq.testing",
        )
    return url


def xdist_worker_url(url: str, worker: str | None, allowed: range | None = None) -> str:
    """The test database of one pytest-xdist worker process (``worker`` is its id, "gw0", "gw1"...; None or ""
    outside xdist), so that workers running side by side never flush each other's data: gw0 keeps ``url``'s
    database and gwN takes the N-th one below it (``-n 2`` on database 9 uses 9 and 8). The result is checked as
    ``test_redis_url`` checks any, so a worker that would land on database 0 or outside ``allowed`` is refused with
    a ValidationError rather than given someone else's database."""
    index = int(worker.removeprefix("gw")) if worker else 0
    if index == 0:
        return test_redis_url(url, allowed)
    db = database_of(url) - index
    if db < 1:
        raise ValidationError(
            f"pytest-xdist worker {worker} would use database {db} (the database of {shown(url)} less {index}); "
            "start from a higher database or run fewer workers",
            op="taskq.testing",
        )
    return test_redis_url(with_database(url, db), allowed)


def with_database(url: str, db: int) -> str:
    """``url`` selecting database ``db`` instead, where it names its database: in the query (``?db=``, the only
    place a unix socket URL can) or else in the path."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if parts.scheme == "unix" or any(name == "db" for name, _ in query):
        # Joined by hand: urlunsplit would drop the empty host of unix:///path.
        kept = [(name, value) for name, value in query if name != "db"]
        return url.partition("?")[0] + "?" + urlencode([*kept, ("db", str(db))])
    return urlunsplit(parts._replace(path=f"/{db}"))


# Not a test, whatever its name says: keep pytest from collecting it where a test module imports it.
test_redis_url.__test__ = False  # type: ignore[attr-defined]
