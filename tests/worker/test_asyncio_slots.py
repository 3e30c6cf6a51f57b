"""The asyncio pool's handler slots (worker/asyncio_pool/slots.py): long-lived coroutines that run one attempt after
another. A cancel reaches only the attempt that something else ended, while it runs; the slot's task survives it,
uncancelled, for the next attempt. The pool's semantics as a whole (timeouts, cancels, shutdown on both pools) are
the tests of test_processing.py, test_lease.py and test_fetch_on_ack.py."""

from __future__ import annotations

import asyncio
import threading

from worker_support import state_of, wait_for

from taskq.queues.engine import Inspector, Task, TaskMessage, handler
from taskq.queues.engine.transitions import Leased
from taskq.worker.asyncio_pool.slots import Slots
from taskq.worker.attempt import Attempt, Outcome

Q = "default"


def attempt_of(task_id: str) -> Attempt:
    leased = Leased(task_id, b"t", b"", b"", 0, f"token-{task_id}")
    return Attempt(leased, Q, Task(TaskMessage(task_id, "t", b"", Q), 0), None, None, 0.0)


def ended_from_outside(attempt: Attempt) -> None:
    """What the watchdog or the subscriber does, from its own thread: claim, then interrupt."""
    assert attempt.claim()
    attempt.interrupt()


class Handlers:
    """Attempts that wait on a gate each, and what the slots handed over; what each saw as it started."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.started: dict[str, int] = {}  # the slot task's cancel count when the attempt started
        self.outcomes: dict[str, str] = {}
        self.timed_out: dict[str, bool] = {}

    async def run(self, attempt: Attempt) -> Outcome:
        if attempt.claimed:  # as HandlerCalls.awaited: ended before it started
            return Outcome("drop")
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        try:
            self.timed_out[attempt.id] = False
            async with asyncio.timeout(0):  # a handler's own timeout works in a slot that was cancelled before
                await asyncio.sleep(1)
        except TimeoutError:
            self.timed_out[attempt.id] = True
        self.started[attempt.id] = cancelling
        try:
            await self.gates.setdefault(attempt.id, asyncio.Event()).wait()
        except asyncio.CancelledError:
            return Outcome("drop")
        return Outcome("success")

    def done(self, attempt: Attempt, outcome: Outcome) -> None:
        self.outcomes[attempt.id] = outcome.kind


async def until(condition, what: str) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_cancel_reaches_only_the_attempt_ended_and_the_slot_runs_the_next_one_uncancelled():
    async def scenario() -> None:
        handlers = Handlers()
        slots = Slots(1, handlers.run, handlers.done)
        first, second, third = attempt_of("first"), attempt_of("second"), attempt_of("third")
        slots.submit([first])
        await until(lambda: "first" in handlers.started, "the first attempt started")
        await asyncio.to_thread(ended_from_outside, first)
        await until(lambda: "first" in handlers.outcomes, "the first attempt cancelled")
        assert handlers.outcomes["first"] == "drop"

        slots.submit([second])  # the same slot, the only one
        await until(lambda: "second" in handlers.started, "the second attempt started")
        assert handlers.started["second"] == 0 and handlers.timed_out["second"]
        await asyncio.to_thread(first.interrupt)  # a late cancel for the first: the second is not touched
        await asyncio.sleep(0.05)
        handlers.gates["second"].set()
        await until(lambda: "second" in handlers.outcomes, "the second attempt finished")
        assert handlers.outcomes["second"] == "success"

        slots.submit([third])  # ended while it waited for the slot: never started
        ended_from_outside(third)
        await until(lambda: "third" in handlers.outcomes, "the third attempt handed over")
        assert handlers.outcomes["third"] == "drop" and "third" not in handlers.started
        slots.close()

    asyncio.run(scenario())


def test_attempts_beyond_the_idle_slots_wait_and_run_in_order():
    async def scenario() -> None:
        handlers = Handlers()
        slots = Slots(2, handlers.run, handlers.done)
        attempts = [attempt_of(str(n)) for n in range(5)]
        slots.submit(attempts)
        await until(lambda: len(handlers.started) == 2, "two attempts started")
        assert set(handlers.started) == {"0", "1"}
        for n in range(5):
            handlers.gates.setdefault(str(n), asyncio.Event()).set()
        await until(lambda: len(handlers.outcomes) == 5, "every attempt finished")
        assert set(handlers.outcomes.values()) == {"success"}
        slots.close()

    asyncio.run(scenario())


def test_after_a_timeout_the_pool_runs_the_next_tasks_in_the_same_slot_uncancelled(
    make_server, registry, client, inspector: Inspector, clock
):
    started, seen = threading.Event(), []

    @handler("a:long", registry=registry)
    async def long(task: Task) -> None:
        started.set()
        await asyncio.sleep(60)

    @handler("a:next", registry=registry)
    async def following(task: Task) -> None:
        running = asyncio.current_task()
        seen.append(running.cancelling() if running is not None else -1)

    make_server(pool="asyncio", concurrency=1)
    long_info = client.enqueue("a:long", timeout=5)
    assert started.wait(10)
    clock.advance(5.1)  # past its timeout: the watchdog ends it, and the slot's task is cancelled for it
    wait_for(lambda: state_of(inspector, Q, long_info.id) == "retry", what="the timed-out task in retry")
    infos = client.enqueue_many([("a:next", b"")] * 3, queue=Q, retention=60)
    wait_for(lambda: all(state_of(inspector, Q, i.id) == "completed" for i in infos), what="the next tasks completed")
    assert seen == [0, 0, 0]
