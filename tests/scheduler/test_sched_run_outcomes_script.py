"""A periodic entry's run records its outcome inside the transition that ends it (``cron_run_ended`` in
``lua/_lib.lua``), whichever script that is.

Each case runs one transition twice on a real Redis: once without the entry's history and once with the run's
record seeded in it. The two databases must be identical except for that record, which must read as expected: so
the recording changes nothing else, and the transition itself stays as its own state table says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.transitions import Call
from tests.engine.dbstate import ZSet, dump, seed
from tests.engine.task_state import NOW, NOW_MS, Q, counts, fake_clock, task

ENTRY = make_entry("@every 10s", "email", {"to": "ada"})
TICK = NOW_MS - 10_000
RUN = ENTRY.task_id(TICK)
MANUAL = ENTRY.manual_task_id(TICK)
HISTORY = Q.cron_history(ENTRY.id)
W = "w1"


def record(task_id: str = RUN, **fields: Any) -> dict[str, Any]:
    return {"tick": TICK, "task_id": task_id, "at": TICK + 5, "outcome": "enqueued", **fields}


def active(task_id: str) -> dict[str, Any]:
    """A run its worker leased a second ago."""
    return {
        Q.task(task_id): task("active", since=NOW_MS - 1000, lease="tok"),
        Q.lease: ZSet({task_id: NOW_MS + 5_000}),
        Q.type_counts: counts(active__email=1),
    }


def waiting_in(state: str, task_id: str = RUN) -> dict[str, Any]:
    return {
        Q.task(task_id): task(state, since=NOW_MS - 1000),
        getattr(Q, state): ZSet({task_id: NOW_MS - 1}),
        Q.type_counts: counts(**{f"{state}__email": 1}),
    }


@dataclass
class Ended:
    id: str
    before: dict[str, Any]
    call: Any  # Transitions -> Call
    seeded: dict[str, Any] = field(default_factory=record)
    expected: dict[str, Any] | None = None  # None: the record is left as it was


ENDINGS = [
    Ended(
        "success deleted (no retention): completed, ran from the handler's start",
        active(RUN),
        lambda t: t.done("default", [(RUN, "tok")], W, [NOW - 0.8]),
        expected=record(outcome="completed", ended=NOW_MS, ran_ms=800, attempts=1),
    ),
    Ended(
        "success kept (retention): completed",
        active(RUN),
        lambda t: t.complete("default", [(RUN, "tok", 60.0)], W, [NOW - 0.25]),
        expected=record(outcome="completed", ended=NOW_MS, ran_ms=250, attempts=1),
    ),
    Ended(
        "a failed attempt that will retry: failed; with no handler start (the recoverer's), ran since it went active",
        active(RUN),
        lambda t: t.retry("default", RUN, "tok", NOW + 30, "boom", worker=W),
        expected=record(outcome="failed", ended=NOW_MS, ran_ms=1000, attempts=1),
    ),
    Ended(
        "a retried run that succeeds: completed, its attempts counted",
        active(RUN),
        lambda t: t.done("default", [(RUN, "tok")], W, [NOW - 0.1]),
        seeded=record(outcome="failed", ended=NOW_MS - 5000, ran_ms=40, attempts=1),
        expected=record(outcome="completed", ended=NOW_MS, ran_ms=100, attempts=2),
    ),
    Ended(
        "retries spent: archived",
        active(RUN),
        lambda t: t.archive("default", RUN, "tok", "boom", worker=W, started=NOW - 0.5),
        expected=record(outcome="archived", ended=NOW_MS, ran_ms=500, attempts=1),
    ),
    Ended(
        "an operator archives a run waiting to retry: archived, its last attempt's time kept",
        waiting_in("retry"),
        lambda t: t.archive_task("default", RUN, "ops"),
        seeded=record(outcome="failed", ended=NOW_MS - 5000, ran_ms=40, attempts=1),
        expected=record(outcome="archived", ended=NOW_MS, ran_ms=40, attempts=1),
    ),
    Ended(
        "an operator deletes a pending run: deleted",
        {Q.task(RUN): task("pending"), Q.pending: [RUN], Q.type_counts: counts(pending__email=1)},
        lambda t: t.delete_task("default", RUN, "ops"),
        expected=record(outcome="deleted", ended=NOW_MS),
    ),
    Ended(
        "a run asked for by hand records the same way",
        active(MANUAL),
        lambda t: t.done("default", [(MANUAL, "tok")], W, [NOW - 0.8]),
        seeded=record(MANUAL, manual=True),
        expected=record(MANUAL, manual=True, outcome="completed", ended=NOW_MS, ran_ms=800, attempts=1),
    ),
    Ended(
        "the janitor deleting a completed run later is not news",
        waiting_in("completed"),
        lambda t: t.delete_expired("default"),
        seeded=record(outcome="completed", ended=NOW_MS - 9000, ran_ms=7, attempts=1),
    ),
    Ended(
        "a requeue at shutdown ends no run",
        active(RUN),
        lambda t: t.requeue("default", [(RUN, "tok")], W),
    ),
    Ended(
        "another run's record at the same tick is not touched",
        active(RUN),
        lambda t: t.done("default", [(RUN, "tok")], W, [NOW - 0.8]),
        seeded=record(MANUAL, manual=True),
    ),
    Ended(
        "a task that is no run leaves a history alone",
        active("report-1"),
        lambda t: t.done("default", [("report-1", "tok")], W, [NOW - 0.8]),
    ),
]


def run(r: redis.Redis, redis_url: str, state: dict[str, Any], call: Any) -> dict[str, Any]:
    r.flushdb()
    seed(r, state)
    broker = Broker(redis_url, clock=fake_clock())
    try:
        built: Call = call(broker.transitions)
        broker.run(built)
    finally:
        broker.close()
    return dump(r)


@pytest.mark.parametrize("case", ENDINGS, ids=lambda c: c.id)
def test_the_transition_that_ends_a_run_records_its_outcome(r, redis_url, case):
    seeded = json.dumps(case.seeded, separators=(",", ":"))
    plain = run(r, redis_url, case.before, case.call)
    recorded = run(r, redis_url, case.before | {HISTORY: ZSet({seeded: float(TICK)})}, case.call)
    history = recorded.pop(HISTORY)
    assert recorded == plain, "recording an outcome changed something else"
    assert list(history.values()) == [float(TICK)]
    (member,) = history
    assert json.loads(member) == (case.seeded if case.expected is None else case.expected)


def test_a_run_without_a_record_writes_nothing(r, redis_url):
    """Trimmed past the cap (or an id that only looks like a run's): no history appears."""
    after = run(r, redis_url, active(RUN), lambda t: t.done("default", [(RUN, "tok")], W, [NOW - 0.8]))
    assert HISTORY not in after
    assert Q.task(RUN) not in after  # the success itself was written
