"""The Channels layer for the configured Redis, whatever its topology (see ``taskq.queues.engine.broker.topology``).

One server and Sentinel use channels-redis (it takes sentinel hosts itself). channels-redis cannot use a Redis
Cluster (its scripts and BZPOPMIN span keys of many slots), and it is not needed there: each console process's
live hub feeds only the consumers of its own process (``taskq.console.live.hub``), so an in-process layer carries every
message the console sends.
"""

from __future__ import annotations

from typing import Any

from taskq.queues.engine.broker import topology

REDIS_LAYER = "channels_redis.core.RedisChannelLayer"
IN_PROCESS_LAYER = "channels.layers.InMemoryChannelLayer"
# channels-redis waits for messages with BZPOPMIN for up to 5 s; redis-py's default read timeout is 5 s too, so a
# socket quiet for 5 s could time out mid-wait and end its consumer. Reads may take longer than the wait.
SOCKET_TIMEOUT = 15.0


def channel_layers(redis_url: str) -> dict[str, Any]:
    """The ``CHANNEL_LAYERS`` setting for ``redis_url``."""
    where = topology.parse(redis_url)
    if where.kind == "cluster":
        return {"default": {"BACKEND": IN_PROCESS_LAYER}}
    if where.kind == "sentinel":
        host: dict[str, Any] = {
            "sentinels": list(where.nodes),
            "master_name": where.service,
            "db": where.db,
            "socket_timeout": SOCKET_TIMEOUT,
            **where.credentials(),
        }
        if where.sentinel_credentials():
            host["sentinel_kwargs"] = where.sentinel_credentials()
        if where.tls:
            host["ssl"] = True
        return {"default": {"BACKEND": REDIS_LAYER, "CONFIG": {"hosts": [host]}}}
    return {
        "default": {
            "BACKEND": REDIS_LAYER,
            "CONFIG": {"hosts": [{"address": redis_url, "socket_timeout": SOCKET_TIMEOUT}]},
        }
    }
