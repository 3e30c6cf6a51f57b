"""The producer's I/O, written once as flows (see ``sans_io``) that the blocking and asyncio clients drive: write
placements (``enqueue_flow``) and follow a task to its end (``wait_flow``); and the error a refused bulk write
raises (``BulkEnqueueError``). ``producer`` decides what to write; this module writes it.
"""

from __future__ import annotations

import time
from dataclasses import replace

from .errors import (
    DuplicateTaskError,
    EngineError,
    FailedPreconditionError,
    RedisCommandError,
    RedisUnavailableError,
    TaskIdConflictError,
    TaskNotFoundError,
)
from .keys import Keys
from .message import TaskInfo
from .producer import by_queue, chunks, info_of, new_task_id
from .quoting import shown
from .sans_io import Command, Flow, Pipeline
from .transitions import BULK_CHUNK, Placement, Transitions


class BulkEnqueueError(EngineError):
    """An enqueue stopped at a chunk that Redis refused, or that could not be sent: nothing of that chunk was
    written, nor of the chunks behind it.

    ``enqueued`` holds the TaskInfos of what the chunks before it did enqueue, in the order of the items.
    ``position`` is the refused task's place in its chunk (from 0) when the script refused one task (a taken task
    id, a held unique lock), else None.

    What is raised is the subclass that is also the error it stands for (``BulkDuplicateTaskError`` is a
    ``DuplicateTaskError``, ``BulkRedisUnavailableError`` a ``RedisUnavailableError``...), so an ``except`` of the
    plain error still catches it; ``except BulkEnqueueError`` catches every one of them."""

    def __init__(
        self, message: str, *, op: str = "", enqueued: list[TaskInfo] | None = None, position: int | None = None
    ) -> None:
        super().__init__(message, op=op)
        self.enqueued: list[TaskInfo] = list(enqueued or ())
        self.position: int | None = position

    def alone(self) -> EngineError:
        """The error as one ``enqueue`` call raises it: the plain error this one stands for, without what a bulk
        write adds (a coalesced call sent one task, and never saw the round it went in)."""
        error = _PLAIN.get(type(self), EngineError)(self.message, op=self.op)
        error.code = self.code
        return error


class BulkDuplicateTaskError(BulkEnqueueError, DuplicateTaskError):
    """A unique task of the chunk found its lock held."""


class BulkTaskIdConflictError(BulkEnqueueError, TaskIdConflictError):
    """A task id of the chunk exists already."""


class BulkRedisUnavailableError(BulkEnqueueError, RedisUnavailableError):
    """The connection failed while the chunk was sent or answered: whether the chunk was written is unknown."""


class BulkRedisCommandError(BulkEnqueueError, RedisCommandError):
    """Redis answered the chunk's script with an error reply of its own (out of memory, a disabled command...)."""


class BulkFailedPreconditionError(BulkEnqueueError, FailedPreconditionError):
    """The chunk was barred because an earlier chunk of the same call was refused (see ``lua/enqueue.lua``)."""


#: The bulk error raised for each error an enqueue script call can end with; any other stays a BulkEnqueueError.
_BULK_KINDS: dict[type[EngineError], type[BulkEnqueueError]] = {
    DuplicateTaskError: BulkDuplicateTaskError,
    TaskIdConflictError: BulkTaskIdConflictError,
    RedisUnavailableError: BulkRedisUnavailableError,
    RedisCommandError: BulkRedisCommandError,
    FailedPreconditionError: BulkFailedPreconditionError,
}
_PLAIN = {bulk: plain for plain, bulk in _BULK_KINDS.items()}


def enqueue_flow(transitions: Transitions, placements: list[Placement], now_ms: int) -> Flow:
    """One script call per queue and chunk, the chunks of a queue pipelined (see ``Pipeline``) behind a barrier
    (see ``lua/enqueue.lua``), and the TaskInfos made while Redis runs them. A refused chunk raises
    ``BulkEnqueueError`` with what the earlier chunks did enqueue. Infos come back in the order of
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
                raise refusal(outcome, parts[n], infos) from None
            infos += made[n * BULK_CHUNK : (n + 1) * BULK_CHUNK]
    if len(groups) == 1:
        return infos
    # Grouping by queue reorders the tasks; callers zip the result with their items, so give it their order.
    position = {(p.message.queue, p.message.id): n for n, p in enumerate(placements)}
    return sorted(infos, key=lambda info: position[(info.queue, info.id)])


def enqueue_one_flow(transitions: Transitions, placement: Placement, now_ms: int) -> Flow:
    """``enqueue_flow`` for one task, the common case of ``Client.enqueue``: the same script call and TaskInfo,
    without the grouping, chunking and reordering that only many tasks need. Returns its TaskInfo in a list, as
    ``enqueue_flow`` does; a refusal raises the plain error (``DuplicateTaskError``, ``TaskIdConflictError``...)
    that one ``enqueue`` call raises."""
    queue = placement.message.queue
    made: list[TaskInfo] = []
    (outcome,) = yield Pipeline(
        [transitions.enqueue(queue, (placement,))], lambda: made.append(info_of(placement, now_ms))
    )
    if isinstance(outcome, EngineError):
        raise refusal(outcome, [placement], []).alone() from None
    if outcome is True:  # the queue's first task: list it where the console and workers find queues
        yield Command("sadd", (transitions.keys.queues, queue))
    return made or [info_of(placement, now_ms)]


def refusal(exc: EngineError, chunk: list[Placement], enqueued: list[TaskInfo]) -> BulkEnqueueError:
    """The error of a chunk that was refused (or could not be sent), with what the chunks before it enqueued.

    The script names a refused task by its position in the chunk (``"CONFLICT 3"``); the error names it by its id
    and type instead, and keeps the position for the coalescer (which sends the chunk again without it)."""
    kind = _BULK_KINDS.get(type(exc), BulkEnqueueError)
    if not isinstance(exc, DuplicateTaskError | TaskIdConflictError) or not exc.message.isdigit():
        error = kind(exc.message, op=exc.op, enqueued=enqueued)
        error.code = exc.code  # the plain error's code where no subclass stands for it
        return error
    position = int(exc.message) - 1
    message = chunk[position].message
    if isinstance(exc, DuplicateTaskError):
        text = (
            f"a unique task of type {shown(message.type)} with the same payload already holds its lock in queue "
            f"{shown(message.queue)}; nothing was enqueued"
        )
    else:
        text = f"task id {shown(message.id)} already exists in queue {shown(message.queue)}; nothing was enqueued"
    return kind(text, op="client.enqueue", enqueued=enqueued, position=position)


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
                f"no task {task_id} in queue {shown(queue)}"
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
