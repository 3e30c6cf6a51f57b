"""Opening Redis connections from URLs, and the start-up safety check on the eviction policy."""

from __future__ import annotations

import logging
from typing import Any, Protocol, cast

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.sentinel
import redis.cluster
import redis.sentinel

from ..errors import RedisCommandError
from ..settings import DEFAULTS
from . import topology
from .redis_errors import connecting

log = logging.getLogger("taskq.queues.engine")

DEFAULT_REDIS_URL = DEFAULTS.redis_url  # REDIS_URL's default

# A connection that hangs forever is worse than one that fails: the worker's loops must get control back.
_SOCKET_OPTIONS = {"socket_connect_timeout": 5.0, "health_check_interval": 30}
# Seconds a caller of a sized pool (``connect(pool_size=...)``) waits for a free connection. Each is held for one
# command or pipeline, so a wait this long means a pool far too small for its callers, not a busy moment.
POOL_WAIT = 30.0


def connect(url: str = DEFAULT_REDIS_URL, *, pool_size: int | None = None, **options: Any) -> redis.Redis:
    """A client for the Redis a URL names (see ``topology``): ``redis://``, ``rediss://`` (TLS) or ``unix://``
    for one server, ``redis+sentinel://`` for the master a set of sentinels watch (it follows a failover),
    ``redis+cluster://`` for a Redis Cluster (a ``redis.cluster.RedisCluster``, typed as a ``redis.Redis``: it
    answers the same commands, routed by key slot).

    ``pool_size``: a pool of that many connections instead of redis-py's default (100): one where a caller beyond
    them waits for a free connection, for one server; the size alone for a sentinel-managed pool, which cannot
    wait; nothing for a cluster, whose pools (one per node) are unbounded."""
    with connecting(url):
        where = topology.parse(url)
        options = _data_options(where, options)
        if pool_size is not None and where.kind == "single":
            return _waiting_pool(url, pool_size, options)
        if pool_size is not None and where.kind == "sentinel":
            options = {"max_connections": pool_size, **options}  # a sentinel-managed pool cannot wait
        if where.kind == "sentinel":
            sentinels = redis.sentinel.Sentinel(
                list(where.nodes),  # type: ignore[no-untyped-call]
                sentinel_kwargs=_sentinel_options(where),
            )
            return cast(
                redis.Redis,
                sentinels.master_for(
                    where.service,
                    db=where.db,  # type: ignore[no-untyped-call]
                    **options,
                ),
            )
        if where.kind == "cluster":
            nodes = [redis.cluster.ClusterNode(host, port) for host, port in where.nodes]  # type: ignore[no-untyped-call]
            return cast(redis.Redis, redis.cluster.RedisCluster(startup_nodes=nodes, **options))
        return redis.Redis.from_url(url, **options)


def connect_async(url: str = DEFAULT_REDIS_URL, **options: Any) -> redis.asyncio.Redis:
    """``connect`` for redis.asyncio: the same URLs, the asyncio client of each kind."""
    with connecting(url):
        where = topology.parse(url)
        options = _data_options(where, options)
        if where.kind == "sentinel":
            sentinels = redis.asyncio.sentinel.Sentinel(
                list(where.nodes),  # type: ignore[no-untyped-call]
                sentinel_kwargs=_sentinel_options(where),
            )
            return cast(redis.asyncio.Redis, sentinels.master_for(where.service, db=where.db, **options))
        if where.kind == "cluster":
            nodes = [redis.asyncio.cluster.ClusterNode(host, port) for host, port in where.nodes]
            return cast(redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster(startup_nodes=nodes, **options))
        return redis.asyncio.Redis.from_url(url, **options)


def _data_options(where: topology.Topology, options: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of the data connections: timeouts, the URL's credentials and TLS, the caller's own."""
    tls = {"ssl": True} if where.tls else {}
    return {**_SOCKET_OPTIONS, **where.credentials(), **tls, **options}


def _waiting_pool(url: str, size: int, options: dict[str, Any]) -> redis.Redis:
    """A client of one server whose pool holds ``size`` connections, where a caller beyond them waits (up to
    ``POOL_WAIT`` seconds) for one to come free: redis-py's default pool (100) fails at once with "Too many
    connections"."""
    pool = redis.BlockingConnectionPool.from_url(url, max_connections=size, timeout=POOL_WAIT, **options)
    client = redis.Redis(connection_pool=pool)
    client.auto_close_connection_pool = True  # closing the client closes its pool, as from_url's clients do
    return client


def _sentinel_options(where: topology.Topology) -> dict[str, Any]:
    """How to talk to the sentinels themselves: their own credentials, and timeouts so a dead one is skipped."""
    return {"socket_connect_timeout": 1.0, "socket_timeout": 1.0, **where.sentinel_credentials()}


def is_cluster(conn: Any) -> bool:
    """Whether a client talks to a Redis Cluster (blocking or asyncio)."""
    return isinstance(conn, redis.cluster.RedisCluster | redis.asyncio.cluster.RedisCluster)


class SendsCommands(Protocol):
    """What sends one plain command by its redis-py name: a ``Broker`` (typed here, where the broker is not)."""

    def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any: ...


def warn_if_evicting(broker: SendsCommands) -> str | None:
    """Log loudly when the Redis of ``broker`` may evict keys: an evicted task hash or list is a task silently lost.

    Returns the policy, or None when it cannot be read (managed Redis often forbids CONFIG).
    """
    try:
        raw: Any = broker.send("connection.warn_if_evicting", "config_get", "maxmemory-policy").get("maxmemory-policy")
    except RedisCommandError:
        return None
    policy = raw.decode() if isinstance(raw, bytes) else raw
    if policy and policy != "noeviction":
        log.warning(
            "Redis maxmemory-policy is %r: under memory pressure Redis will evict keys and tasks will be lost "
            "without a trace. Set it to 'noeviction'.",
            policy,
        )
    return policy


def database_of(conn: redis.Redis) -> int:
    """The database number a client selects (0 for a cluster or when unset)."""
    if is_cluster(conn):
        return 0
    return int(conn.connection_pool.connection_kwargs.get("db", 0) or 0)
