"""Concurrent ``enqueue`` calls on one client share script calls: threads on a ``Client``, tasks on an
``AsyncClient``.

Each call plans its task itself (``producer``), then joins the coalescer's queue of calls. When no call is being
written, the caller writes: it takes every call waiting (at most ``BULK_CHUNK``), sends them to the broker as one
enqueue script call per queue (``producer_flows.write_flow``), and hands each waiting caller its own result.
Calls that arrive meanwhile wait for the next round, which the first of them writes once the current round is done.
A caller alone writes its own task at once; many callers share round trips, and each waits for at most two of
them. The coalescer takes the broker and nothing of the client: it calls no one back.

Each call still gets its own TaskInfo, or its own error, once Redis has (or refused) its task: the enqueue script
is all-or-nothing and replies with the ``Refusal`` of the task it refused (a taken task id, a held unique lock), so
that call gets the error built from it and the others are sent again without it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, cast

from .broker import AsyncBroker, Broker
from .clock import to_ms
from .errors import EngineError
from .message import TaskInfo
from .producer_flows import OP, refused, write_flow
from .sans_io import Flow, Pipeline, Request, drive, drive_async
from .transitions import BULK_CHUNK, Placement, Refusal, Transitions


class _Waiting:
    """One enqueue call: its placement, then its outcome; ``finish`` wakes its caller."""

    __slots__ = ("placement", "info", "error", "writes", "finish")

    def __init__(self, placement: Placement, finish: Callable[[], None]) -> None:
        self.placement = placement
        self.info: TaskInfo | None = None
        self.error: BaseException | None = None
        self.writes = False  # handed the writing of the next round
        self.finish = finish

    def result(self) -> TaskInfo:
        if self.error is not None:
            raise self.error
        assert self.info is not None
        return self.info


class _Rounds:
    """The queue of calls and who writes the next round; the same for threads and for asyncio tasks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._writing = False

    def _join(self, call: _Waiting, must_wait: Callable[[], None]) -> bool:
        """Queue ``call``; True when its caller writes the round now (nobody else is writing). Otherwise
        ``must_wait`` is called first, under the lock, to give the call what wakes it (only waiting callers pay
        for one)."""
        with self._lock:
            self._waiting.append(call)
            if self._writing:
                must_wait()
                return False
            self._writing = True
            return True

    def _take_round(self) -> list[_Waiting]:
        with self._lock:
            batch, self._waiting = self._waiting[:BULK_CHUNK], self._waiting[BULK_CHUNK:]
        return batch

    def _abandon(self, call: _Waiting) -> None:
        """A waiting caller gave up (its asyncio task was cancelled): its task is not written, and when the next
        round had been handed to it, the role passes on, so the calls behind it are not left waiting."""
        with self._lock:
            if call in self._waiting:
                self._waiting.remove(call)
        if call.writes:
            self._hand_over()

    def _hand_over(self) -> None:
        """The round is written: the first call that arrived meanwhile writes the next one."""
        with self._lock:
            following = self._waiting[0] if self._waiting else None
            self._writing = following is not None
        if following is not None:
            following.writes = True
            following.finish()


class EnqueueCoalescer(_Rounds):
    """For a ``Client``: each round goes to the broker as one enqueue call per queue.

    The round's enqueue calls go on the connection the broker keeps for one caller at a time
    (``run_pipeline(..., own_connection=True)``), instead of a connection checked out of the pool and back per call.
    That is safe because rounds never overlap: a caller writes only when ``_join`` made it the writer, and passes
    the role on when its round is done (``_hand_over``), so one thread at a time sends on the kept connection."""

    def __init__(self, broker: Broker) -> None:
        super().__init__()
        self._broker = broker

    def enqueue(self, placement: Placement) -> TaskInfo:
        call = _Waiting(placement, _nothing)
        done: threading.Event | None = None

        def must_wait() -> None:
            nonlocal done
            done = threading.Event()
            call.finish = done.set

        if not self._join(call, must_wait):
            assert done is not None
            done.wait()
            if not call.writes:
                return call.result()
        batch = self._take_round()
        transitions, now_ms = self._broker.transitions, to_ms(self._broker.clock.now())
        if len(batch) == 1:  # alone (the common case): no one to share the round with, nor to tell its outcome
            try:
                outcome = drive(write_flow(transitions, [placement], now_ms), self._send)
            finally:
                self._hand_over()
            return alone(outcome, placement)
        try:
            for group in by_queue(batch):
                drive(group_flow(group, transitions, now_ms), self._send)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: raised here, named to the others
            interrupted(batch, exc)
            raise
        finally:
            self._hand_over()
        return call.result()

    def _send(self, request: Request) -> Any:
        """A round's request: its enqueue call on the kept connection (see the class), the listing of a new queue
        as any command."""
        if type(request) is Pipeline:
            return self._broker.run_pipeline(request, replicated=True, own_connection=True)
        return self._broker.execute(OP, request, replicated=True)


class AsyncEnqueueCoalescer(_Rounds):
    """For an ``AsyncClient``, whose tasks run on one event loop: each round goes to its ``AsyncBroker`` as one
    enqueue call per queue."""

    def __init__(self, broker: AsyncBroker) -> None:
        super().__init__()
        self._broker = broker

    async def enqueue(self, placement: Placement) -> TaskInfo:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        call = _Waiting(placement, wake)
        if not self._join(call, _nothing):
            try:
                await woken
            except asyncio.CancelledError:
                self._abandon(call)
                raise
            if not call.writes:
                return call.result()
        batch = self._take_round()
        transitions, now_ms = self._broker.transitions, to_ms(self._broker.clock.now())
        if len(batch) == 1:  # alone, as in EnqueueCoalescer
            try:
                outcome = await drive_async(write_flow(transitions, [placement], now_ms), self._send)
            finally:
                self._hand_over()
            return alone(outcome, placement)
        try:
            for group in by_queue(batch):
                await drive_async(group_flow(group, transitions, now_ms), self._send)
        except BaseException as exc:  # cancelled while writing: the others learn it, this caller sees it
            interrupted(batch, exc)
            raise
        finally:
            self._hand_over()
        return call.result()

    async def _send(self, request: Request) -> Any:
        return await self._broker.execute(OP, request, replicated=True)


def alone(outcome: list[TaskInfo] | Refusal, placement: Placement) -> TaskInfo:
    """The outcome of a caller's task written alone: its TaskInfo, or the error the script's refusal names."""
    if type(outcome) is Refusal:
        raise refused(outcome, [placement])
    return cast(list[TaskInfo], outcome)[0]


def _nothing() -> None:
    pass


def by_queue(batch: list[_Waiting]) -> list[list[_Waiting]]:
    groups: dict[str, list[_Waiting]] = {}
    for call in batch:
        groups.setdefault(call.placement.message.queue, []).append(call)
    return list(groups.values())


def group_flow(group: list[_Waiting], transitions: Transitions, now_ms: int) -> Flow:
    """Write one queue's calls; a call the script refuses gets its error, and the rest are sent again."""
    while group:
        placements = [call.placement for call in group]
        try:
            outcome = yield from write_flow(transitions, placements, now_ms)
        except Exception as exc:  # Redis away, and anything unexpected: every caller of the round sees it
            fail(group, exc)
            return
        if type(outcome) is Refusal:
            # Each caller enqueued one task: it gets the plain error (DuplicateTaskError...), as if alone.
            turned_away = group.pop(outcome.position)
            turned_away.error = refused(outcome, placements)
            turned_away.finish()
            continue  # nothing was written: send the others again
        for call, info in zip(group, outcome, strict=True):
            call.info = info
            call.finish()
        return


def fail(group: list[_Waiting], exc: BaseException) -> None:
    for call in group:
        call.error = exc if len(group) == 1 else own_copy(exc)
        call.finish()


def interrupted(batch: list[_Waiting], exc: BaseException) -> None:
    """The writer was interrupted mid-round: every call still without an outcome learns that, and cannot know
    whether its task was written."""
    error = EngineError(
        f"the round was interrupted ({type(exc).__name__}): the task may or may not be enqueued", op="client.enqueue"
    )
    fail([call for call in batch if call.info is None and call.error is None], error)


def own_copy(exc: BaseException) -> BaseException:
    """An exception of the caller's own: callers in other threads must not share one object (and its traceback).
    A clone of the same class, arguments and attributes, made without calling its constructor (whose signature
    varies)."""
    clone = type(exc).__new__(type(exc), *exc.args)
    clone.args = exc.args
    clone.__dict__.update(exc.__dict__)
    return clone
