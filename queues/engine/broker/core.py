"""What the blocking and the asyncio broker share: their options, where the keys are, the clock, the topology the
URL names, and the one choice of FCALL or EVALSHA (made on the first script call, then kept)."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

import redis

from ..clock import Clock
from ..keys import DEFAULT_PREFIX
from ..transitions import Limits, Transitions
from . import topology
from .connection import database_of, is_cluster


class EngineOptions(TypedDict, total=False):
    """Where the keys are and how time and limits go: taken by every engine handle as
    ``**options: Unpack[...]`` and written once, here."""

    prefix: str
    clock: Clock | None
    limits: Limits | None


class BrokerOptions(EngineOptions, total=False):
    """The keyword arguments of ``Broker`` that the client, the inspector and the remote consumer take too and
    hand over as they are; the asyncio client takes ``EngineOptions`` and an asyncio connection."""

    conn: redis.Redis | None


class BrokerCore:
    """The state of a broker that does no I/O. ``conn`` is its redis-py client (blocking or asyncio)."""

    def __init__(self, redis_url: str, conn: Any, **options: Unpack[EngineOptions]) -> None:
        self.conn = conn
        self.topology = topology.parse(redis_url)
        self.cluster = is_cluster(conn)  # asked once: the check is an isinstance against a union of classes
        #: The database number the client selects (0 on a Cluster): part of the pub/sub channels' names.
        self.database = database_of(conn)
        prefix = options.get("prefix", DEFAULT_PREFIX)
        self.transitions = Transitions(prefix, options.get("clock"), options.get("limits"), cluster=self.cluster)
        self.keys = self.transitions.keys
        self.clock = self.transitions.clock
        #: Whether transitions go out as FCALL (True) or EVALSHA (False); None until the first script call decides
        #: (a broker is often made while Redis is still starting). See ``functions``.
        self._as_functions: bool | None = None

    @property
    def as_functions(self) -> bool | None:
        """Whether this broker sends transitions as FCALL (True) or EVALSHA (False); None before its first script
        call, which decides."""
        return self._as_functions

    def _one_by_one(self, replicated: bool) -> bool:
        """Whether a pipeline's calls run one after another: on a Cluster client (its calls may go to many
        masters), and for a producer's write that waits for replicas (each call waits for its own)."""
        return self.cluster or (replicated and bool(self.topology.wait_replicas))
