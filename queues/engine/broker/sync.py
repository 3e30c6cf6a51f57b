"""The blocking broker: runs transition calls, pipelines of them, plain commands and flows on one redis-py client,
and raises the engine's errors (``redis_errors.translated``). What a script call sends is decided in
``scripting``, shared with the asyncio broker; this module only sends and reads."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Unpack

import redis
from redis.exceptions import RedisClusterException

from ..errors import EngineError
from ..layout import LAYOUT_VERSION, check_flow
from ..sans_io import Flow, Pipeline, Request, drive
from ..transitions import Call
from . import functions, scripting
from .commands import run_command
from .connection import DEFAULT_REDIS_URL, connect
from .core import BrokerCore, EngineOptions
from .pipelining import KeptConnection, send_all
from .redis_errors import translated
from .scripting import Wire


class Broker(BrokerCore):
    """Runs calls built by ``transitions`` against Redis."""

    conn: redis.Redis

    def __init__(
        self, redis_url: str = DEFAULT_REDIS_URL, *, conn: redis.Redis | None = None, **options: Unpack[EngineOptions]
    ):
        """``conn``: a client of the caller's (closed by ``close``); else one for ``redis_url``. ``options``: the
        key prefix, the clock and the limits (``EngineOptions``)."""
        super().__init__(redis_url, conn if conn is not None else connect(redis_url), **options)
        self._kept = KeptConnection(self.conn)

    def run(self, call: Call, replicated: bool = False) -> Any:
        """Run a transition. ``replicated`` (a producer's write): with ``wait_replicas`` in the URL, return only
        once that many replicas have it, and raise RedisUnavailableError when they do not confirm in time."""
        with translated(call.op, script=call.script.name):
            if replicated and self.topology.wait_replicas:
                reply = drive(scripting.replicated(call, self.topology), partial(self._pipelined, call.keys[0]))
            else:
                as_function = self._functions_for([call])
                try:
                    reply = self.conn.execute_command(*scripting.first(call, as_function))  # type: ignore[no-untyped-call]
                except redis.ResponseError as exc:
                    reply = drive(scripting.settle(call, exc, as_function), self._answer)
                    if isinstance(reply, Exception):
                        raise reply from None
        return call.parse(reply)

    def run_pipeline(
        self,
        pipeline: Pipeline,
        replicated: bool = False,
        own_connection: bool = False,
        kept: KeptConnection | None = None,
    ) -> list[Any]:
        """Run a ``Pipeline`` (see there) and return its outcomes; ``replicated`` as in ``run``. ``own_connection``:
        on the connection this broker keeps for a caller that never runs two pipelines at once (the enqueue
        coalescer's rounds, see ``coalescing``), not on one checked out of the pool. ``kept``: on that connection,
        one of ``keep_connection``'s."""
        if own_connection:
            kept = self._kept
        calls = pipeline.calls
        if self._one_by_one(replicated):
            return list(drive(scripting.one_after_another(calls), lambda call: self.run(call, replicated)))
        as_function = self._functions_for(calls)
        commands = [scripting.first(call, as_function) for call in calls]
        replies = send_all(self.conn, commands, pipeline.meanwhile, kept)
        if scripting.mendable(replies, as_function):
            replies = drive(scripting.settle_all(calls, replies, as_function), self._answer)
        return scripting.outcomes_of(calls, replies)

    def keep_connection(self) -> KeptConnection:
        """A connection of this broker's pool for one caller that never runs two pipelines at once (one thread of
        its own), to hand ``run_pipeline(..., kept=...)``: it saves the checkout from the pool and back on each
        call. Taken on first use and kept until the broker closes."""
        return KeptConnection(self.conn)

    def execute(self, op: str, request: Request, replicated: bool = False) -> Any:
        """Run any request a flow yields: a transition ``Call`` or ``Pipeline``, a plain ``Command`` or a ``Batch``;
        errors are the engine's, and a plain command's name ``op``. ``replicated``: the calls are a producer's
        writes (see ``run``)."""
        if isinstance(request, Call):
            return self.run(request, replicated=replicated)
        if isinstance(request, Pipeline):
            return self.run_pipeline(request, replicated=replicated)
        with translated(op):
            return run_command(self.conn, request)

    def drive(self, op: str, flow: Flow, replicated: bool = False) -> Any:
        """Run a flow to its end on this broker and return its value (see ``execute``)."""
        return drive(flow, lambda request: self.execute(op, request, replicated))

    def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One plain command, by its redis-py method name: ``broker.send("queues.list", "smembers", key)``."""
        with translated(op):
            return getattr(self.conn, name)(*args, **kwargs)

    def subscription(self, op: str) -> Subscription:
        """A pub/sub connection of its own (see ``Subscription``), its errors named ``op``."""
        return Subscription(self.conn.pubsub(), op)  # type: ignore[no-untyped-call]

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
        return int(self.drive(op, check_flow(self.keys, op, expected, stamp)))

    def close(self) -> None:
        self.conn.close()

    def _functions_for(self, calls: list[Call]) -> bool:
        """Whether ``calls`` run as functions (FCALL): as chosen once, or by loading the library first; never
        loaded for scripts in no library (asynq's, on a Redis that may hold asynq's keys alone)."""
        if self._as_functions is not None:
            return self._as_functions
        return self._load_library() if scripting.in_library(calls) else False

    def _load_library(self) -> bool:
        """Load the function library where the server takes it, once, and so choose FCALL (True) or EVALSHA
        (False) for this broker (see ``functions``); EVALSHA this time, chosen again next call, when Redis could not
        be reached."""
        chosen = functions.known(self.conn)
        if chosen is None:
            chosen = functions.loaded(self.conn, self._answer(functions.load_command()))
            if chosen is None:
                return False
        self._as_functions = chosen
        return chosen

    def _answer(self, command: Wire) -> Any:
        """A command's reply, or its error as redis-py's exception (returned, for ``scripting``'s steps)."""
        try:
            return self.conn.execute_command(*command)  # type: ignore[no-untyped-call]
        except redis.RedisError as exc:
            return exc

    def _pipelined(self, key: str, commands: list[Wire]) -> list[Any]:
        """``commands`` as one pipeline on one connection (on a Redis Cluster, to the master of ``key``'s slot);
        error replies returned as exceptions."""
        if self.cluster:
            return on_slot_master(self.conn, key, partial(_pipeline_on, commands=commands))  # type: ignore[no-any-return]
        return _pipeline_on(self.conn, commands)


def _pipeline_on(conn: Any, commands: list[Wire]) -> list[Any]:
    pipe = conn.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return pipe.execute(raise_on_error=False)  # type: ignore[no-any-return]


def on_slot_master(conn: Any, key: str, fn: Callable[[Any], Any]) -> Any:
    """``fn(node)`` with ``node`` the connection to the master of ``key``'s slot, for what must bypass the cluster
    client's own routing (a script and its WAIT on one connection). A slot that moved (MOVED) or a master gone
    (the connection fails) makes the client read the slot map again, and ``fn`` runs once more on the slot's
    master now; a second failure is raised, for the caller's ``translated``."""
    try:
        return fn(conn.get_redis_connection(conn.get_node_from_key(key)))
    except (redis.exceptions.MovedError, redis.ConnectionError, redis.TimeoutError):
        try:
            conn.nodes_manager.initialize()
        except (redis.RedisError, RedisClusterException):
            pass  # no node answers yet: the second try fails the same way, and the caller retries later
    return fn(conn.get_redis_connection(conn.get_node_from_key(key)))


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
