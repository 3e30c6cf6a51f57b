"""Sans-I/O operations: producer operations written once, as generators that yield I/O requests, and the
drivers that run them on the blocking client or the asyncio client. A request is a transition ``Call`` or a plain
Redis ``Command``; the driver sends back the reply, or throws the error into the generator.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from . import cluster
from .connection import is_cluster
from .errors import DuplicateTaskError, EngineError, TaskIdConflictError, TaskNotFoundError
from .keys import Keys
from .message import TaskInfo
from .producer import by_queue, chunks, info_of, new_task_id
from .redis_errors import ScriptRun, translate
from .transitions import BULK_CHUNK, Call, Placement, Transitions


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


def script_runs(calls: list[Call]) -> list[ScriptRun]:
    return [(call.script.sha, call.script.source, call.keys, call.args) for call in calls]


def outcomes_of(calls: list[Call], replies: list[Any]) -> list[Any]:
    """A ``Pipeline``'s outcomes from the raw replies (redis-py exceptions among them) of its calls."""
    return [
        translate(call.op, reply, call.script.name) if isinstance(reply, BaseException) else call.parse(reply)
        for call, reply in zip(calls, replies, strict=False)
    ]


def enqueue_flow(transitions: Transitions, placements: list[Placement], now_ms: int) -> Flow:
    """One script call per queue and chunk, the chunks of a queue pipelined (see ``Pipeline``) behind a barrier
    (see ``lua/enqueue.lua``), and the TaskInfos made while Redis runs them. A refused chunk raises with
    ``enqueued``: the infos of the tasks that earlier chunks did enqueue. Infos come back in the order of
    ``placements``."""
    infos: list[TaskInfo] = []
    groups = by_queue(placements)
    for queue, group in groups.items():
        parts = list(chunks(group, BULK_CHUNK))
        barrier = new_task_id() if len(parts) > 1 else ""
        made: list[TaskInfo] = []

        def make_infos(group: list[Placement] = group, made: list[TaskInfo] = made) -> None:
            made += [info_of(p, now_ms) for p in group]

        outcomes = yield Pipeline([transitions.enqueue(queue, part, barrier=barrier) for part in parts], make_infos)
        if not made:
            make_infos()
        new_queue = any(outcome is True for outcome in outcomes)
        if new_queue:
            # A script saw the queue's first task: list it where the console and workers find queues.
            yield Command("sadd", (transitions.keys.queues, queue))
        for n, outcome in enumerate(outcomes):
            if isinstance(outcome, EngineError):
                raise _refusal(outcome, parts[n], infos) from None
            infos += made[n * BULK_CHUNK : (n + 1) * BULK_CHUNK]
    if len(groups) == 1:
        return infos
    # Grouping by queue reorders the tasks; callers zip the result with their items, so give it their order.
    position = {(p.message.queue, p.message.id): n for n, p in enumerate(placements)}
    return sorted(infos, key=lambda info: position[(info.queue, info.id)])


def _refusal(exc: EngineError, chunk: list[Placement], enqueued: list[TaskInfo]) -> EngineError:
    """The error of a chunk that was refused (or could not be sent), with what the chunks before it enqueued."""
    error = _explain(exc, chunk)
    error.enqueued = list(enqueued)  # type: ignore[attr-defined]
    if exc.message.isdigit():  # the refused task's position in the chunk (from 0)
        error.position = int(exc.message) - 1  # type: ignore[attr-defined]
    return error


def _explain(exc: EngineError, chunk: list[Placement]) -> EngineError:
    """The script names the refused task by its position in the chunk; name it by its id and type instead."""
    if not isinstance(exc, (DuplicateTaskError, TaskIdConflictError)) or not exc.message.isdigit():
        return exc
    message = chunk[int(exc.message) - 1].message
    if isinstance(exc, DuplicateTaskError):
        text = (
            f"a unique task of type {message.type!r} with the same payload already holds its lock in queue "
            f"{message.queue!r}; nothing was enqueued"
        )
    else:
        text = f"task id {message.id!r} already exists in queue {message.queue!r}; nothing was enqueued"
    return type(exc)(text, op="client.enqueue")


#: Event ``to`` values after which a task will not run again.
TERMINAL_EVENTS = frozenset({"completed", "archived", "done", "deleted"})
TERMINAL_STATES = frozenset({"completed", "archived"})
#: Re-read the task at least this often, in case the stream was trimmed past its events.
RECHECK_MS = 1000


def wait_flow(keys: Keys, queue: str, task_id: str, timeout: float | None) -> Flow:
    """Follow the queue's event stream until the task ends. The stream's last id is read before the task, so
    no transition between the two reads is missed."""
    q = keys.queue(queue)
    deadline = None if timeout is None else time.monotonic() + timeout
    newest = yield Command("xrevrange", (q.events,), {"count": 1})
    last_id = newest[0][0] if newest else "0-0"
    last_seen: TaskInfo | None = None
    ended_as: str | None = None
    while True:
        fields = yield Command("hgetall", (q.task(task_id),))
        if fields:
            last_seen = TaskInfo.from_hash(task_id, queue, fields)
            if last_seen.state in TERMINAL_STATES:
                return last_seen
        elif ended_as == "done" and last_seen is not None:
            return replace(last_seen, state="completed")
        elif ended_as == "deleted" or last_seen is None:
            raise TaskNotFoundError(
                f"no task {task_id} in queue {queue!r}"
                + (
                    " (it was deleted)"
                    if ended_as
                    else " (a task without retention is deleted when it succeeds, so it may have finished already)"
                ),
                op="client.wait",
            )
        block = RECHECK_MS if deadline is None else min(RECHECK_MS, int((deadline - time.monotonic()) * 1000))
        if block <= 0:
            raise TimeoutError(f"task {task_id} did not finish within {timeout} s")
        reply = yield Command("xread", ({q.events: last_id},), {"block": block, "count": 500})
        for _stream, entries in reply or []:
            for entry_id, event in entries:
                last_id = entry_id
                if event.get(b"id") == task_id.encode() and event.get(b"to", b"").decode() in TERMINAL_EVENTS:
                    ended_as = event[b"to"].decode()
