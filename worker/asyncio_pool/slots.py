"""The asyncio pool's handler slots: ``concurrency`` coroutines that live as long as the loop, each running one
async attempt after another (take the next, await its handler, hand its outcome over). No ``asyncio.Task`` is
made per attempt, and no done-callback runs per attempt: a slot that finds an attempt waiting takes it without
suspending, and an idle slot waits on a bare future that ``submit`` resolves.

How an attempt is ended from outside (a timeout, a deadline, an operator's cancel, a lost lease, shutdown):
``Attempt.interrupt`` claims it, then asks the loop to call ``attempt.future.cancel()``. A slot sets itself as the
``future`` of the attempt it runs, and its ``cancel`` cancels the slot's task only while the slot still runs an
attempt that something else has claimed, and once for that attempt. A cancel that arrives late, when the slot has
moved on to an attempt nobody ended, touches nothing. The cancel ends the handler (its outcome is then "drop", see
``HandlerCalls.awaited``), and the slot's task survives it: the slot takes its cancelled state back
(``Task.uncancel``) before it takes the next attempt, so a later ``asyncio.timeout`` in a handler sees no stale
cancel.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from ..attempt import Attempt, Outcome

log = logging.getLogger("taskq.worker.asyncio_slots")


class Slots:
    """``count`` slot coroutines on the running loop. ``run`` awaits an attempt's handler and returns its outcome;
    ``done`` takes the outcome (and the slot's place in the capacity count) once it returned. Touched from the loop
    only."""

    def __init__(
        self,
        count: int,
        run: Callable[[Attempt], Awaitable[Outcome]],
        done: Callable[[Attempt, Outcome], None],
    ) -> None:
        self.run, self.done = run, done
        self.loop = asyncio.get_running_loop()
        self.waiting: deque[Attempt] = deque()  # submitted while every slot was busy (capacity bounds them)
        self.idle: list[asyncio.Future[Attempt]] = []  # the idle slots' futures, the last to go idle last
        self.closed = False
        self._slots = [Slot(self) for _ in range(count)]

    def submit(self, attempts: list[Attempt]) -> None:
        """Run ``attempts`` (each in a place of the capacity count already taken for it)."""
        idle = self.idle
        for attempt in attempts:
            attempt.loop = self.loop
            while idle:
                waiter = idle.pop()
                if not waiter.done():
                    waiter.set_result(attempt)
                    break
            else:
                self.waiting.append(attempt)

    def close(self) -> None:
        """End every slot: those waiting at once, those running at their handler's next step (the loop's end)."""
        self.closed = True
        for slot in self._slots:
            slot.stop()


class Slot:
    """One slot: its task, and the attempt it runs (None while it waits)."""

    __slots__ = ("_slots", "_task", "_current", "_cancelled")

    def __init__(self, slots: Slots) -> None:
        self._slots = slots
        self._current: Attempt | None = None
        self._cancelled: Attempt | None = None  # the attempt this slot's task was cancelled for
        self._task = slots.loop.create_task(self._serve())

    def cancel(self) -> None:
        """Cancel the running attempt if something else ended it (``Attempt.interrupt``, on the loop)."""
        current = self._current
        if current is None or not current.claimed or self._cancelled is current:
            return
        self._cancelled = current
        self._task.cancel()

    def stop(self) -> None:
        self._task.cancel()

    async def _serve(self) -> None:
        slots, task = self._slots, self._task
        waiting, idle = slots.waiting, slots.idle
        while not slots.closed:
            if waiting:
                attempt = waiting.popleft()
            else:
                waiter = slots.loop.create_future()
                idle.append(waiter)
                attempt = await waiter
            self._current = attempt
            attempt.future = self
            try:
                slots.done(attempt, await slots.run(attempt))
            except Exception:  # a bug here must not cost the pool a slot
                log.exception("task %s: the slot failed to run or hand over its attempt", attempt.id)
            self._current = None
            if self._cancelled is not None:
                self._cancelled = None
                while task.uncancel():
                    pass
