"""Sans-I/O: the requests a flow yields and the drivers that run flows. A flow is an operation written once, as a
generator that yields I/O requests (a transition ``Call``, a plain Redis ``Command``, a ``Batch`` of commands, a
``Pipeline`` of calls); a driver (``drive`` on the blocking clients, ``drive_async`` on the asyncio ones) sends
each request to its executor and sends back the reply, or throws the error into the generator. The flows
themselves live with what they do: the producer's in ``producer_flows``, the workflows' in ``workflows``...
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import cluster
from .connection import is_cluster
from .redis_errors import ScriptRun, translate
from .transitions import Call


@dataclass
class Command:
    """A plain Redis command, by redis-py method name."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Batch:
    """Commands sent together in one MULTI/EXEC; the reply is the list of their replies."""

    commands: list[Command]


def _nothing() -> None:
    return None


@dataclass
class Pipeline:
    """Transition calls sent one behind the other without waiting for each other's replies: Redis runs one while
    the client packs and sends the next, and ``meanwhile`` (the flow's own work) runs once all are sent. The
    reply is the list of outcomes in order: each call's parsed reply, or its engine error (returned, not raised).
    A connection that fails ends the list with its error; the calls after it are not known to have run. Where
    the calls cannot share a connection (a Redis Cluster client, ``wait_replicas``) they run one after another,
    and the list ends at the first error."""

    calls: list[Call]
    meanwhile: Callable[[], Any] = _nothing


Request = Call | Command | Batch | Pipeline
Flow = Generator[Request, Any, Any]
#: What a flow asks its driver for: a Request for the engine's flows (any type for a flow of another kind).
Asked = TypeVar("Asked")


def _atomic(conn: Any, batch: Batch) -> bool:
    return cluster.batch_is_atomic(is_cluster(conn), [command.args[0] for command in batch.commands])


def run_command(conn: Any, request: Command | Batch) -> Any:
    """Run a plain command or a batch on a blocking redis-py client (see ``cluster`` for a Redis Cluster)."""
    if isinstance(request, Batch):
        pipe = conn.pipeline(transaction=_atomic(conn, request))
        for command in request.commands:
            getattr(pipe, command.name)(*command.args, **command.kwargs)
        return pipe.execute()
    reads = cluster.split_xread(is_cluster(conn), request.name, request.args, request.kwargs)
    if reads:
        pipe = conn.pipeline(transaction=False)
        for read in reads:
            pipe.xread(**read)
        found = cluster.merge_xread(pipe.execute())
        if not found:
            time.sleep(cluster.poll_wait(request.kwargs))
        return found
    return getattr(conn, request.name)(*request.args, **request.kwargs)


async def run_command_async(conn: Any, request: Command | Batch) -> Any:
    """Run a plain command or a batch on an asyncio redis-py client (see ``cluster`` for a Redis Cluster)."""
    if isinstance(request, Batch):
        async with conn.pipeline(transaction=_atomic(conn, request)) as pipe:
            for command in request.commands:
                getattr(pipe, command.name)(*command.args, **command.kwargs)
            return await pipe.execute()
    reads = cluster.split_xread(is_cluster(conn), request.name, request.args, request.kwargs)
    if reads:
        async with conn.pipeline(transaction=False) as pipe:
            for read in reads:
                pipe.xread(**read)
            found = cluster.merge_xread(await pipe.execute())
        if not found:
            await asyncio.sleep(cluster.poll_wait(request.kwargs))
        return found
    return await getattr(conn, request.name)(*request.args, **request.kwargs)


def drive(flow: Generator[Asked, Any, Any], execute: Callable[[Asked], Any]) -> Any:
    """Run a flow to its end with a blocking executor and return its value."""
    try:
        request = next(flow)
        while True:
            try:
                reply = execute(request)
            except Exception as exc:  # handed to the flow, which decides; it re-raises what it does not handle
                request = flow.throw(exc)
            else:
                request = flow.send(reply)
    except StopIteration as stop:
        return stop.value


async def drive_async(flow: Generator[Asked, Any, Any], execute: Callable[[Asked], Awaitable[Any]]) -> Any:
    try:
        request = next(flow)
        while True:
            try:
                reply = await execute(request)
            except Exception as exc:
                request = flow.throw(exc)
            else:
                request = flow.send(reply)
    except StopIteration as stop:
        return stop.value


def script_runs(calls: list[Call], as_functions: bool = False) -> list[ScriptRun]:
    """The calls to send; ``as_functions``: the server has this library of functions loaded (``functions.usable``),
    so each transition that is one of them runs by FCALL."""
    return [
        (call.script.sha, call.script.source, call.keys, call.args, call.script.function if as_functions else "")
        for call in calls
    ]


def outcomes_of(calls: list[Call], replies: list[Any]) -> list[Any]:
    """A ``Pipeline``'s outcomes from the raw replies (redis-py exceptions among them) of its calls."""
    return [
        translate(call.op, reply, call.script.name) if isinstance(reply, BaseException) else call.parse(reply)
        for call, reply in zip(calls, replies, strict=False)
    ]
