"""Whether a broker sends its transitions as FCALL or EVALSHA, decided once per broker on its first script call,
by loading the function library (``scripts.library``) where the server takes it.

A server without FUNCTION (Redis 6.2), a user the ACL refuses it, or a Cluster client (the library would have to be
on every master) keeps EVALSHA, as does a pool marked with ``use_evalsha``. What a pool answered is remembered for
the other brokers on it. A function missing later (FUNCTION FLUSH, a server that restarted without persistence) is
loaded again and the call sent once more, as EVALSHA resends a script after NOSCRIPT; over maxmemory a call goes out
as EVALSHA (see ``scripting.settle``).
"""

from __future__ import annotations

import weakref
from typing import Any

import redis

from ..scripts import library
from .connection import is_cluster

_chosen: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def use_evalsha(conn: Any) -> None:
    """Run scripts on this connection's pool with EVALSHA even where the server has functions (for a broker whose
    first script call is still to come)."""
    _chosen[conn.connection_pool] = False


def known(conn: Any) -> bool | None:
    """What is known of the client's pool already: False for a Cluster client, which has no pool of its own."""
    pool = getattr(conn, "connection_pool", None)
    if pool is None or is_cluster(conn):
        return False
    return _chosen.get(pool)


def load_command() -> tuple[str, ...]:
    """FUNCTION LOAD of the library, as a command's words."""
    return ("FUNCTION", "LOAD", library()[1])


def loaded(conn: Any, reply_to_load: Any) -> bool | None:
    """Whether the library is loaded, so that calls on ``conn`` go out as FCALL, given the reply to
    ``load_command`` (an exception as a value): True when the library is there (loaded now or before), False when
    the server refuses it (no FUNCTION, an ACL), remembered for the pool; None when Redis could not be reached:
    EVALSHA this time, and the broker asks again on its next call (the EVALSHA that follows reports the outage)."""
    if isinstance(reply_to_load, redis.ConnectionError | redis.TimeoutError):
        return None
    if isinstance(reply_to_load, redis.ResponseError):
        loaded = "already exists" in str(reply_to_load)
    else:
        loaded = True
    _chosen[conn.connection_pool] = loaded
    return loaded
