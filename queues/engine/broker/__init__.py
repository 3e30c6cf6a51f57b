"""The one road to Redis: everything that sends a call lives in this package, with a blocking face (``Broker``)
and an asyncio face (``AsyncBroker``) of the same shape. Both run a transition (``run``), a pipeline of them
(``run_pipeline``), any request a flow yields (``execute``, ``drive``), a plain command by name (``send``), and
translate redis-py's errors into the engine's through one function (``redis_errors.translate``).

- ``scripting``: what a script call sends (FCALL or EVALSHA, and what follows NOSCRIPT, a missing function, OOM,
  WAIT for replicas, a Cluster client's one-by-one pipelines), written once for both faces; sans-I/O.
- ``functions``: the choice of FCALL or EVALSHA, once per broker, by loading the function library.
- ``pipelining``: many commands on one connection without waiting for each reply; the kept connection.
- ``commands``: plain commands and MULTI/EXEC batches (and a Cluster's split XREAD).
- ``sync`` and ``asyncio_broker``: the two faces, which only send and read.
- ``core``: what both faces share; ``owners``: bases of the stores and entry points that hold a broker.
"""

from __future__ import annotations

import redis.asyncio

from .asyncio_broker import AsyncBroker
from .core import BrokerOptions, EngineOptions
from .owners import BrokerOwner, BrokerStore
from .pipelining import KeptConnection
from .scripting import not_replicated
from .sync import Broker, Subscription

#: The client type a caller may hand an ``AsyncClient`` (``conn=``), named here so no module outside the broker
#: imports redis-py.
AsyncRedis = redis.asyncio.Redis

__all__ = [
    "AsyncRedis",
    "AsyncBroker",
    "Broker",
    "BrokerOptions",
    "BrokerOwner",
    "BrokerStore",
    "EngineOptions",
    "KeptConnection",
    "Subscription",
    "not_replicated",
]
