"""The blocking runner of transition calls: one Redis connection, error replies mapped to named errors."""

from __future__ import annotations

from functools import partial
from typing import Any, Self, TypedDict

import redis
import redis.asyncio

from . import functions, redis_errors, topology
from .clock import Clock
from .connection import DEFAULT_REDIS_URL, connect, connect_async, is_cluster
from .errors import EngineError, RedisUnavailableError
from .keys import DEFAULT_PREFIX
from .layout import LAYOUT_VERSION, check_flow
from .redis_errors import KeptConnection, run_scripts_pipelined_async, translated
from .sans_io import (
    Flow,
    Pipeline,
    Request,
    drive,
    drive_async,
    outcomes_of,
    run_command,
    run_command_async,
    script_runs,
)
from .transitions import Call, Limits, Transitions


def not_replicated(op: str, confirmed: int, where: topology.Topology) -> RedisUnavailableError:
    """A producer's write the master applied but too few replicas confirmed: a failover now may lose it. The
    caller does what it does after a lost reply: retry with the same task id (TaskIdConflictError: it is there)."""
    return RedisUnavailableError(
        f"applied on the master but confirmed by {confirmed} of {where.wait_replicas} replica(s) within "
        f"{where.wait_timeout_ms} ms (wait_replicas): a failover may lose it; retry with the same task id",
        op=op,
    )


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


class Broker:
    """Runs calls built by ``transitions`` against Redis."""

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
        limits: Limits | None = None,
        conn: redis.Redis | None = None,
    ):
        self.conn = conn if conn is not None else connect(redis_url)
        self.topology = topology.parse(redis_url)
        self.cluster = is_cluster(self.conn)  # asked once: the check is an isinstance against a union of classes
        self.transitions = Transitions(prefix, clock, limits, cluster=self.cluster)
        self.keys = self.transitions.keys
        self.clock = self.transitions.clock
        self._own = KeptConnection(self.conn)
        self._load_functions = partial(functions.load, self.conn)  # for a pipelined call whose function is missing

    def run(self, call: Call, replicated: bool = False) -> Any:
        """Run a transition. ``replicated`` (a producer's write): with ``wait_replicas`` in the URL, return only
        once that many replicas have it, and raise RedisUnavailableError when they do not confirm in time."""
        with translated(call.op, script=call.script.name):
            if replicated and self.topology.wait_replicas:
                reply, confirmed = call.script.run_and_wait(
                    self.conn, call.keys, call.args, self.topology.wait_replicas, self.topology.wait_timeout_ms
                )
                if confirmed < self.topology.wait_replicas:
                    raise not_replicated(call.op, confirmed, self.topology)
            else:
                reply = call.script.run(self.conn, call.keys, call.args)
        return call.parse(reply)

    def run_pipeline(self, pipeline: Pipeline, replicated: bool = False, own_connection: bool = False) -> list[Any]:
        """Run a ``Pipeline`` (see there) and return its outcomes; ``replicated`` as in ``run``. ``own_connection``:
        on the connection this broker keeps for one caller at a time (the client's enqueue rounds), not on one
        checked out of the pool."""
        if self.cluster or (replicated and self.topology.wait_replicas):
            outcomes: list[Any] = []
            for call in pipeline.calls:
                try:
                    outcomes.append(self.run(call, replicated))
                except EngineError as exc:
                    return [*outcomes, exc]
            return outcomes
        kept = self._own if own_connection else None
        runs = script_runs(pipeline.calls, functions.usable(self.conn))
        replies = redis_errors.run_scripts_pipelined(self.conn, runs, pipeline.meanwhile, self._load_functions, kept)
        return outcomes_of(pipeline.calls, replies)

    def execute(self, op: str, request: Request) -> Any:
        """Run any request a flow yields: a transition ``Call`` or ``Pipeline``, a plain ``Command`` or a ``Batch``;
        errors are the engine's, and a plain command's name ``op``."""
        if isinstance(request, Call):
            return self.run(request)
        if isinstance(request, Pipeline):
            return self.run_pipeline(request)
        with translated(op):
            return run_command(self.conn, request)

    def drive(self, op: str, flow: Flow) -> Any:
        """Run a flow to its end on this broker and return its value (see ``execute``)."""
        return drive(flow, lambda request: self.execute(op, request))

    def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One plain command, by its redis-py method name: ``broker.send("queues.list", "smembers", key)``."""
        with translated(op):
            return getattr(self.conn, name)(*args, **kwargs)

    def subscription(self, op: str) -> Subscription:
        """A pub/sub connection of its own (see ``Subscription``), its errors named ``op``."""
        return Subscription(self.conn.pubsub(), op)  # type: ignore[no-untyped-call]

    def command(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call a redis-py method (a plain command or a pipeline's execute) as operation ``op``: a connection that
        fails raises RedisUnavailableError naming the operation, like a failed script."""
        return redis_errors.call(op, fn, *args, **kwargs)

    def run_unless_raced(self, call: Call) -> bool:
        """Run a call that may lose a race (a heartbeat, an ack or another recoverer got there first): True when
        it was applied, False when a precondition refused it, which leaves the task safe with whoever won.
        Redis being unreachable is still raised."""
        try:
            self.run(call)
            return True
        except EngineError as exc:
            if exc.code == "unavailable":
                raise
            return False

    def check_layout(self, op: str, expected: int = LAYOUT_VERSION, stamp: bool = True) -> int:
        """Refuse a keyspace at another key layout with LayoutVersionError (stamping an empty one unless ``stamp``
        is False); see ``layout``."""
        return int(
            drive(
                check_flow(self.keys, op, expected, stamp),
                lambda request: self.command(op, run_command, self.conn, request),
            )
        )

    def close(self) -> None:
        self.conn.close()


class AsyncBroker:
    """``Broker`` for asyncio code: the same calls, awaited, on a ``redis.asyncio`` client. Scripts go out as
    EVALSHA (no functions on asyncio clients)."""

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
        limits: Limits | None = None,
        conn: redis.asyncio.Redis | None = None,
    ):
        self.conn = conn if conn is not None else connect_async(redis_url)
        self.topology = topology.parse(redis_url)
        self.cluster = is_cluster(self.conn)
        self.transitions = Transitions(prefix, clock, limits, cluster=self.cluster)
        self.keys = self.transitions.keys
        self.clock = self.transitions.clock

    async def run(self, call: Call, replicated: bool = False) -> Any:
        """As ``Broker.run``."""
        with translated(call.op, script=call.script.name):
            if replicated and self.topology.wait_replicas:
                reply, confirmed = await call.script.run_and_wait_async(
                    self.conn, call.keys, call.args, self.topology.wait_replicas, self.topology.wait_timeout_ms
                )
                if confirmed < self.topology.wait_replicas:
                    raise not_replicated(call.op, confirmed, self.topology)
            else:
                reply = await call.script.run_async(self.conn, call.keys, call.args)
        return call.parse(reply)

    async def run_pipeline(self, pipeline: Pipeline, replicated: bool = False) -> list[Any]:
        """As ``Broker.run_pipeline``."""
        if self.cluster or (replicated and self.topology.wait_replicas):
            outcomes: list[Any] = []
            for call in pipeline.calls:
                try:
                    outcomes.append(await self.run(call, replicated))
                except EngineError as exc:
                    return [*outcomes, exc]
            return outcomes
        replies = await run_scripts_pipelined_async(self.conn, script_runs(pipeline.calls), pipeline.meanwhile)
        return outcomes_of(pipeline.calls, replies)

    async def execute(self, op: str, request: Request) -> Any:
        """As ``Broker.execute``."""
        if isinstance(request, Call):
            return await self.run(request)
        if isinstance(request, Pipeline):
            return await self.run_pipeline(request)
        with translated(op):
            return await run_command_async(self.conn, request)

    async def drive(self, op: str, flow: Flow) -> Any:
        """As ``Broker.drive``."""
        return await drive_async(flow, lambda request: self.execute(op, request))

    async def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """As ``Broker.send``."""
        with translated(op):
            return await getattr(self.conn, name)(*args, **kwargs)

    async def check_layout(self, op: str, expected: int = LAYOUT_VERSION, stamp: bool = True) -> int:
        """As ``Broker.check_layout``."""
        return int(await self.drive(op, check_flow(self.keys, op, expected, stamp)))

    async def close(self) -> None:
        await self.conn.aclose()


class Subscription:
    """Pub/sub on a connection of its own: subscribe to channels and patterns, read what arrives. Not thread-safe
    (nor is redis-py's PubSub): one thread owns it. Every call raises the engine's errors, named ``op``."""

    def __init__(self, pubsub: Any, op: str) -> None:
        self._pubsub = pubsub
        self.op = op

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with translated(self.op):
            return getattr(self._pubsub, name)(*args, **kwargs)

    def subscribe(self, *channels: str) -> None:
        self._call("subscribe", *channels)

    def unsubscribe(self, *channels: str) -> None:
        self._call("unsubscribe", *channels)

    def psubscribe(self, *patterns: str) -> None:
        self._call("psubscribe", *patterns)

    def punsubscribe(self, *patterns: str) -> None:
        self._call("punsubscribe", *patterns)

    def get_message(self, timeout: float = 0.0) -> dict[str, Any] | None:
        """The next message (a dict of ``type``, ``channel``, ``pattern``, ``data``; subscription confirmations
        included), or None when none arrives within ``timeout`` seconds."""
        return self._call("get_message", timeout=timeout)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Drop the connection; never raises (it is dropped either way)."""
        try:
            self._call("close")
        except EngineError:
            pass


class BrokerStore:
    """Base of the stores that keep one kind of record (workers, schedulers, the event export) in Redis through
    a broker. Each command's operation is named ``<area>.<op>``, so an error says which store and call failed."""

    area = "store"

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.keys = broker.keys

    def _call(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return self.broker.command(f"{self.area}.{op}", fn, *args, **kwargs)


class BrokerOwner:
    """Base of the entry points that own their broker (Client, Inspector): ``close()`` releases its connections,
    and ``with`` closes it at the end of the block."""

    broker: Broker

    def close(self) -> None:
        self.broker.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
