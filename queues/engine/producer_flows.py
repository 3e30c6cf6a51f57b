"""The producer's I/O, written once as flows (see ``sans_io``) that the blocking and asyncio clients drive: write
placements (``write_flow`` for one call's or one round's tasks of a queue, ``enqueue_flow`` for ``enqueue_many``)
and follow a task to its end (``wait_flow``); and the errors of a refused write, built once from the script's
``Refusal`` (``refused``) or from the error a chunk ended with (``chunk_failed``). ``producer`` decides what to
write; this module writes it.
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
from .transitions import BULK_CHUNK, Placement, Refusal, Transitions

OP = "client.enqueue"


class BulkEnqueueError(Exception):
    """What ``enqueue_many`` raises when it stopped at a chunk that Redis refused, or that could not be sent:
    nothing of that chunk was written, nor of the chunks behind it.

    ``enqueued`` holds the TaskInfos of what the chunks before it did enqueue, in the order of the items.
    ``position`` is the refused task's place in its chunk (from 0) when the script refused one task (a taken task
    id, a held unique lock), else None.

    What is raised is the class that is the plain error first and this one besides (``BulkDuplicateTaskError`` is a
    ``DuplicateTaskError``, ``BulkRedisUnavailableError`` a ``RedisUnavailableError``...), so an ``except`` of the
    plain error still catches it, and ``except BulkEnqueueError`` catches every one of them. This class adds only
    what a bulk write knows; the rest (``op``, ``message``, ``code``) is the plain error's."""

    enqueued: list[TaskInfo]
    position: int | None
    op: str
    message: str
    code: str


class BulkDuplicateTaskError(DuplicateTaskError, BulkEnqueueError):
    """A unique task of the chunk found its lock held."""


class BulkTaskIdConflictError(TaskIdConflictError, BulkEnqueueError):
    """A task id of the chunk exists already."""


class BulkRedisUnavailableError(RedisUnavailableError, BulkEnqueueError):
    """The connection failed while the chunk was sent or answered: whether the chunk was written is unknown."""


class BulkRedisCommandError(RedisCommandError, BulkEnqueueError):
    """Redis answered the chunk's script with an error reply of its own (out of memory, a disabled command...)."""


class BulkFailedPreconditionError(FailedPreconditionError, BulkEnqueueError):
    """The chunk was barred because an earlier chunk of the same call was refused (see ``lua/enqueue.lua``)."""


class BulkOtherError(EngineError, BulkEnqueueError):
    """Any other error the chunk ended with (its ``code`` is that error's)."""


#: The bulk error raised for each error an enqueue script call can end with; any other is a BulkOtherError.
_BULK_KINDS: dict[type[EngineError], type[EngineError]] = {
    DuplicateTaskError: BulkDuplicateTaskError,
    TaskIdConflictError: BulkTaskIdConflictError,
    RedisUnavailableError: BulkRedisUnavailableError,
    RedisCommandError: BulkRedisCommandError,
    FailedPreconditionError: BulkFailedPreconditionError,
}


def refused(refusal: Refusal, chunk: list[Placement], enqueued: list[TaskInfo] | None = None) -> EngineError:
    """The error for the task the enqueue script refused (see ``Refusal.describe``). ``enqueued`` (for
    ``enqueue_many``): what the chunks before it enqueued, and the error is then the bulk one (see
    ``BulkEnqueueError``); None: the plain error one ``enqueue`` call raises."""
    kind, text = refusal.describe(chunk)
    if enqueued is None:
        return kind(text, op=OP)
    return _bulk(kind, text, OP, enqueued, refusal.position)


def chunk_failed(error: EngineError, enqueued: list[TaskInfo]) -> EngineError:
    """The bulk error of a chunk that ended with ``error`` as a whole (Redis away, an error reply, a barrier): the
    same message, operation and code, with what the chunks before it enqueued."""
    bulk = _bulk(type(error), error.message, error.op, enqueued, None)
    bulk.code = error.code
    return bulk


def _bulk(kind: type[EngineError], text: str, op: str, enqueued: list[TaskInfo], position: int | None) -> EngineError:
    error = _BULK_KINDS.get(kind, BulkOtherError)(text, op=op)
    assert isinstance(error, BulkEnqueueError)
    error.enqueued = list(enqueued)
    error.position = position
    return error


def write_flow(transitions: Transitions, placements: list[Placement], now_ms: int) -> Flow:
    """Write one queue's placements (at most ``BULK_CHUNK``) in one script call, the TaskInfos made while Redis
    runs it: the common case of ``Client.enqueue`` (one task, or one round of the coalescer). Returns the TaskInfos
    in order, or the ``Refusal`` of one task (nothing was written); any other error is raised."""
    queue = placements[0].message.queue
    made: list[TaskInfo] = []

    def make_infos() -> None:
        made.extend([info_of(p, now_ms) for p in placements])

    (outcome,) = yield Pipeline([transitions.enqueue(queue, placements, refusal_as_reply=True)], make_infos)
    if isinstance(outcome, Exception):
        raise outcome from None
    if type(outcome) is Refusal:
        return outcome
    if outcome is True:  # the queue's first task: list it where the console and workers find queues
        yield Command("sadd", (transitions.keys.queues, queue))
    return made or [info_of(p, now_ms) for p in placements]


def enqueue_flow(transitions: Transitions, placements: list[Placement], now_ms: int) -> Flow:
    """``enqueue_many``'s write: one script call per queue and chunk, the chunks of a queue pipelined (see
    ``Pipeline``) behind a barrier (see ``lua/enqueue.lua``), and the TaskInfos made while Redis runs them. A
    refused chunk raises its bulk error (``BulkEnqueueError``) with what the earlier chunks did enqueue. Infos come
    back in the order of ``placements``."""
    infos: list[TaskInfo] = []
    groups = by_queue(placements)
    for queue, group in groups.items():
        parts = list(chunks(group, BULK_CHUNK))
        barrier = new_task_id() if len(parts) > 1 else ""
        made: list[TaskInfo] = []

        def make_infos(group: list[Placement] = group, made: list[TaskInfo] = made) -> None:
            made += [info_of(p, now_ms) for p in group]

        calls = [transitions.enqueue(queue, part, barrier=barrier, refusal_as_reply=True) for part in parts]
        outcomes = yield Pipeline(calls, make_infos)
        if not made:
            make_infos()
        if any(outcome is True for outcome in outcomes):
            # A script saw the queue's first task: list it where the console and workers find queues.
            yield Command("sadd", (transitions.keys.queues, queue))
        for n, outcome in enumerate(outcomes):
            if isinstance(outcome, Refusal):
                raise refused(outcome, parts[n], infos) from None
            if isinstance(outcome, EngineError):
                raise chunk_failed(outcome, infos) from None
            infos += made[n * BULK_CHUNK : (n + 1) * BULK_CHUNK]
    if len(groups) == 1:
        return infos
    # Grouping by queue reorders the tasks; callers zip the result with their items, so give it their order.
    position = {(p.message.queue, p.message.id): n for n, p in enumerate(placements)}
    return sorted(infos, key=lambda info: position[(info.queue, info.id)])


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
