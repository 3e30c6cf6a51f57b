"""Running the engine's scripts in tests: table-driven cases (seed a state, run one call, compare every key after
it) and a worker in a thread that finishes one task, for the tests of clients that wait."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from taskq.queues.engine import EngineError, FakeClock, Limits
from taskq.queues.engine.broker import Broker, functions
from taskq.queues.engine.transitions import Call, Transitions

from .dbstate import assert_db, seed
from .task_state import NOW, fake_clock

# -- table-driven script cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    """Seed ``before``, run the one call ``call(transitions)`` builds, and compare the whole database with
    ``after``. A refused call (``raises``) or a no-op leaves ``after`` as None: nothing may change."""

    id: str
    before: dict[str, Any]
    call: Callable[[Transitions], Call]
    after: dict[str, Any] | None = None
    returns: Any = b"OK"
    raises: type[EngineError] | None = None
    detail: str | None = None  # the refused call's error detail (the script's reply after the code)
    limits: Limits | None = None


def run_case(r: redis.Redis, redis_url: str, case: Case) -> None:
    """Run the case twice: as a Redis function (FCALL) and as a script (EVALSHA), from the same seed."""
    assert case.raises is None or case.after is None, "a refused call changes nothing"
    for evalsha in (False, True):
        r.flushdb()
        _run_once(r, redis_url, case, evalsha)


def _run_once(r: redis.Redis, redis_url: str, case: Case, evalsha: bool) -> None:
    seed(r, case.before)
    assert_db(r, case.before)  # the seed is exactly the state the case names
    broker = Broker(redis_url, clock=fake_clock(), limits=case.limits)
    if evalsha:
        functions.use_evalsha(broker.conn)
    try:
        call = case.call(broker.transitions)
        if case.raises is not None:
            with pytest.raises(case.raises) as refused:
                broker.run(call)
            assert refused.value.op == call.op
            if case.detail is not None:
                assert refused.value.message == case.detail
        else:
            assert broker.run(call) == case.returns
        assert broker.as_functions is not evalsha, "this Redis has functions (7+): the tests run both ways"
    finally:
        broker.close()
    assert_db(r, case.before if case.after is None else case.after)


def cases(*table: Case) -> Any:
    """``@cases(...)`` parametrizes a test over a table of Case, named by their ids."""
    return pytest.mark.parametrize("case", table, ids=[c.id for c in table])


# -- a worker in a thread, for the tests of waiting clients ---------------------------------------------------


def finishing_worker(redis_url: str, queue: str, then, start: threading.Event | None = None) -> threading.Thread:
    """A thread that takes one task from ``queue`` and finishes it with ``then(broker, leased)``."""

    def work() -> None:
        if start is not None:
            assert start.wait(30)
        broker = Broker(redis_url, clock=FakeClock(NOW))
        try:
            (leased,) = broker.run(broker.transitions.dequeue(queue, 1, 30, "w1", "tok-"))
            then(broker, leased)
        finally:
            broker.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread
