"""Sans-I/O: the requests a flow yields and the drivers that run flows. A flow is an operation written once, as a
generator that yields I/O requests (a transition ``Call``, a plain Redis ``Command``, a ``Batch`` of commands, a
``Pipeline`` of calls); a driver (``drive`` on the blocking side, ``drive_async`` on the asyncio one) sends each
request to its executor (a broker's ``execute``) and sends back the reply, or throws the error into the generator.
The flows themselves live with what they do: the producer's in ``producer_flows``, the workflows' in
``workflows``... Nothing here does I/O: the broker (``broker``) runs the requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .transitions import Call


@dataclass
class Command:
    """A plain Redis command, by redis-py method name."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def command(name: str, *args: Any, **kwargs: Any) -> Command:
    """A plain command by its redis-py method name, written as a call: ``command("hget", key, field)``."""
    return Command(name, args, kwargs)


@dataclass
class Batch:
    """Commands sent together in one round trip; the reply is the list of their replies. ``atomic`` (the default):
    in one MULTI/EXEC, so no other client's command runs between them. Reads that need no such snapshot say
    ``atomic=False``: a MULTI costs a QUEUED reply per command, which a read of 200 queues pays 200 times over."""

    commands: list[Command]
    atomic: bool = True


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


def before_first_write(flow: Flow, check: Flow) -> Flow:
    """``flow``, with the requests of ``check`` (a flow too) run ahead of its first write (a ``Call`` or a
    ``Pipeline``): the client's check of the key layout, which must come after the flow has validated its
    arguments (bad input leaves the keyspace as it was) and before it writes. Returns ``flow``'s value."""
    pending: Flow | None = check
    try:
        request = next(flow)
        while True:
            if pending is not None and isinstance(request, Call | Pipeline):
                yield from pending
                pending = None
            try:
                reply = yield request
            except Exception as exc:  # handed to the flow, as a driver does
                request = flow.throw(exc)
            else:
                request = flow.send(reply)
    except StopIteration as stop:
        return stop.value
