"""The asyncio broker: ``Broker``'s calls, awaited, on a ``redis.asyncio`` client. What a script call sends is
decided in ``scripting``, as for the blocking broker; this module only sends and reads."""

from __future__ import annotations

from typing import Any, Unpack

import redis
import redis.asyncio

from ..errors import EngineError
from ..layout import LAYOUT_VERSION, check_flow
from ..sans_io import Flow, Pipeline, Request, drive_async
from ..transitions import Call
from . import functions, scripting
from .commands import run_command_async
from .connection import DEFAULT_REDIS_URL, connect_async
from .core import BrokerCore, EngineOptions
from .kept_async import AsyncKeptConnection
from .pipelining import send_all_async
from .redis_errors import translated
from .scripting import Step, Wire


class AsyncBroker(BrokerCore):
    """``Broker`` for asyncio code: the same calls, awaited. A producer's write that waits for replicas
    (``wait_replicas``) is refused on a Redis Cluster URL by the asyncio client (see ``aio``)."""

    conn: redis.asyncio.Redis

    def __init__(
        self,
        redis_url: str = DEFAULT_REDIS_URL,
        *,
        conn: redis.asyncio.Redis | None = None,
        **options: Unpack[EngineOptions],
    ):
        """``conn``: a client of the caller's (closed by ``close``); else one for ``redis_url``. ``options``: the
        key prefix, the clock and the limits (``EngineOptions``)."""
        super().__init__(redis_url, conn if conn is not None else connect_async(redis_url), **options)
        self._kept: list[AsyncKeptConnection] = []

    async def run(self, call: Call, replicated: bool = False, kept: AsyncKeptConnection | None = None) -> Any:
        """As ``Broker.run``. ``kept``: sent on that connection, one of ``keep_connection``'s."""
        with translated(call.op, script=call.script.name):
            if replicated and self.topology.wait_replicas:
                reply = await drive_async(scripting.replicated(call, self.topology), self._pipelined)
            else:
                as_function = await self._functions_for([call])
                command = scripting.first(call, as_function)
                try:
                    if kept is None:
                        reply = await self.conn.execute_command(*command)  # type: ignore[no-untyped-call]
                    else:
                        reply = await kept.execute(command)
                except redis.ResponseError as exc:
                    reply = await self._settle(scripting.settle(call, exc, as_function))
                    if isinstance(reply, Exception):
                        raise reply from None
        return call.parse(reply)

    async def run_pipeline(self, pipeline: Pipeline, replicated: bool = False) -> list[Any]:
        """As ``Broker.run_pipeline`` (without a kept connection: the event loop's pool hands one out cheaply)."""
        calls = pipeline.calls
        if self._one_by_one(replicated):
            return list(await drive_async(scripting.one_after_another(calls), lambda call: self.run(call, replicated)))
        as_function = await self._functions_for(calls)
        commands = [scripting.first(call, as_function) for call in calls]
        replies = await send_all_async(self.conn, commands, pipeline.meanwhile)
        if scripting.mendable(replies, as_function):
            replies = await self._settle(scripting.settle_all(calls, replies, as_function))
        return scripting.outcomes_of(calls, replies)

    async def execute(self, op: str, request: Request, replicated: bool = False) -> Any:
        """As ``Broker.execute``."""
        if isinstance(request, Call):
            return await self.run(request, replicated=replicated)
        if isinstance(request, Pipeline):
            return await self.run_pipeline(request, replicated=replicated)
        with translated(op):
            return await run_command_async(self.conn, request)

    async def drive(self, op: str, flow: Flow, replicated: bool = False) -> Any:
        """As ``Broker.drive``."""
        return await drive_async(flow, lambda request: self.execute(op, request, replicated))

    async def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """As ``Broker.send``."""
        with translated(op):
            return await getattr(self.conn, name)(*args, **kwargs)

    async def run_unless_raced(self, call: Call) -> bool:
        """As ``Broker.run_unless_raced``."""
        try:
            await self.run(call)
            return True
        except EngineError as exc:
            if exc.code == "unavailable":
                raise
            return False

    async def check_layout(self, op: str, expected: int = LAYOUT_VERSION, stamp: bool = True) -> int:
        """As ``Broker.check_layout``."""
        return int(await self.drive(op, check_flow(self.keys, op, expected, stamp)))

    def keep_connection(self) -> AsyncKeptConnection | None:
        """A connection for one task of the loop that sends one call at a time, to hand ``run(..., kept=...)``: it
        saves redis.asyncio's checkout, retry and timers on each call (see ``kept_async``). Made on first use and
        closed with the broker. None on a Redis Cluster URL, whose calls go to the master of each key's slot."""
        if self.cluster:
            return None
        kept = AsyncKeptConnection(self.conn)
        self._kept.append(kept)
        return kept

    async def close(self) -> None:
        for kept in self._kept:
            await kept.close()
        await self.conn.aclose()

    async def _functions_for(self, calls: list[Call]) -> bool:
        """As ``Broker._functions_for``."""
        if self._as_functions is not None:
            return self._as_functions
        return await self._load_library() if scripting.in_library(calls) else False

    async def _load_library(self) -> bool:
        """As ``Broker._load_library``."""
        chosen = functions.known(self.conn)
        if chosen is None:
            chosen = functions.loaded(self.conn, await self._answer(functions.load_command()))
            if chosen is None:
                return False
        self._as_functions = chosen
        return chosen

    async def _settle(self, step: Step) -> Any:
        """Run a step of ``scripting``: the step is pure, so it is driven with awaited answers."""
        return await drive_async(step, self._answer)

    async def _answer(self, command: Wire) -> Any:
        """As ``Broker._answer``."""
        try:
            return await self.conn.execute_command(*command)  # type: ignore[no-untyped-call]
        except redis.RedisError as exc:
            return exc

    async def _pipelined(self, commands: list[Wire]) -> list[Any]:
        async with self.conn.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            return await pipe.execute(raise_on_error=False)
