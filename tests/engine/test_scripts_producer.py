"""State table of the enqueue script: every key before, one call, every key after."""

from __future__ import annotations

import pytest

from taskq.queues.engine import DuplicateTaskError, FailedPreconditionError
from taskq.queues.engine.message import TaskMessage
from taskq.queues.engine.transitions import Placement, Refusal

from . import script_runs
from .dbstate import Hash, Stream, Volatile, ZSet, assert_db, seed
from .script_runs import cases, run_case
from .task_state import NOW_MS, Q, counts, event, task

UNIQUE = Q.unique("email", "d41d8cd98f00b204e9800998ecf8427e")
OTHER_QUEUE = "tq:{other}:pending"  # another queue's key: no script may touch it
BARRIER = Q.barrier("call-1")


def placed(
    task_id: str, at: int = 0, unique: str = "", ttl_ms: int = 0, task_type: str = "email", fresh: bool = False
) -> Placement:
    """``fresh``: an id the client made (``producer.new_task_id``), which the script does not look up."""
    message = TaskMessage(id=task_id, type=task_type, payload=b'{"to":"ada"}', queue="default", created_ms=NOW_MS)
    return Placement(message, process_at_ms=at, unique_key=unique, unique_ttl_ms=ttl_ms, fresh_id=fresh)


def enqueue(*items: Placement):
    return lambda t: t.enqueue("default", list(items), refusal_as_reply=True)


def Case(*args, **kwargs) -> script_runs.Case:  # the table's constructor, as in script_runs
    """The script replies "NEW" (parsed to True) when the queue had no event stream, as in every case here
    but the one that seeds a stream: the client then lists the queue."""
    kwargs.setdefault("returns", True)
    return script_runs.Case(*args, **kwargs)


EXISTING = {
    Q.task("a"): task("pending", since=NOW_MS - 1000),
    Q.pending: ["a"],
    Q.type_counts: counts(pending__email=1),
    OTHER_QUEUE: ["x"],
}

PENDING_A = {  # "a" enqueued into an empty queue
    Q.task("a"): task("pending"),
    Q.pending: ["a"],
    Q.type_counts: counts(pending__email=1),
    Q.events: Stream([event("a", "", "pending")]),
}
SCHEDULED_A = {  # "a" enqueued into an empty queue, due 1 ms from now
    Q.task("a"): task("scheduled"),
    Q.scheduled: ZSet({"a": NOW_MS + 1}),
    Q.type_counts: counts(scheduled__email=1),
    Q.events: Stream([event("a", "", "scheduled")]),
}
ATTACHED = {Q.event_offset: Hash({"committed": "0-0", "cap": "1000"})}  # an exporter reads the queue's stream
STREAM_X = {Q.events: Stream([event("x", "", "pending")])}  # a queue that is not new: its stream holds an event
PENDING_A_AFTER_X = {  # "a" enqueued into that queue
    Q.task("a"): task("pending"),
    Q.pending: ["a"],
    Q.type_counts: counts(pending__email=1),
    Q.events: Stream([event("x", "", "pending"), event("a", "", "pending")]),
}
LOCKED = {
    Q.task("z"): task("scheduled", since=NOW_MS - 1000, unique=UNIQUE),
    Q.scheduled: ZSet({"z": NOW_MS + 60_000}),
    UNIQUE: Volatile("z"),
    Q.type_counts: counts(scheduled__email=1),
}


@cases(
    Case(
        "pending",
        {OTHER_QUEUE: ["x"]},
        enqueue(placed("a")),
        after={OTHER_QUEUE: ["x"]} | PENDING_A,
    ),
    Case(
        "process time now is pending",
        {},
        enqueue(placed("a", at=NOW_MS)),
        after=PENDING_A,
    ),
    Case(
        "process time in the future is scheduled",
        {},
        enqueue(placed("a", at=NOW_MS + 1)),
        after=SCHEDULED_A,
    ),
    Case(
        "unique takes its lock with a ttl",
        {},
        enqueue(placed("a", unique=UNIQUE, ttl_ms=60_000)),
        after=PENDING_A | {Q.task("a"): task("pending", unique=UNIQUE), UNIQUE: Volatile("a")},
    ),
    Case(
        "batch goes in order behind what is pending",
        EXISTING,
        enqueue(placed("b"), placed("c", at=NOW_MS + 5000), placed("d", task_type="sms")),
        after={
            **EXISTING,
            Q.task("b"): task("pending"),
            Q.task("c"): task("scheduled"),
            Q.task("d"): task("pending", type="sms"),
            Q.pending: ["d", "b", "a"],  # LPUSH in, RPOP out: a runs first
            Q.scheduled: ZSet({"c": NOW_MS + 5000}),
            Q.type_counts: counts(pending__email=2, scheduled__email=1, pending__sms=1),
            Q.events: Stream(
                [event("b", "", "pending"), event("c", "", "scheduled"), event("d", "", "pending", type="sms")]
            ),
        },
    ),
    Case(
        "ids the client made are not looked up, and the task is written as any other",
        {OTHER_QUEUE: ["x"]},
        enqueue(placed("a", fresh=True)),
        after={OTHER_QUEUE: ["x"]} | PENDING_A,
    ),
    Case(
        # What skipping the lookup means, shown on an id that cannot be made (128 random bits never meet one
        # stored): the script trusts the client's own ids, so only they may be marked fresh.
        "an id marked fresh is not checked against the tasks stored",
        EXISTING,
        enqueue(placed("a", fresh=True)),
        returns=True,
        after={
            **EXISTING,
            Q.task("a"): task("pending"),
            Q.pending: ["a", "a"],
            Q.type_counts: counts(pending__email=2),
            Q.events: Stream([event("a", "", "pending")]),
        },
    ),
    Case(
        "one id a caller named makes the script check every id of the call",
        EXISTING,
        enqueue(placed("b", fresh=True), placed("a")),
        returns=Refusal("CONFLICT", 1),
    ),
    Case(
        "a queue with an event stream is not new",
        STREAM_X,
        enqueue(placed("a")),
        returns=False,
        after=PENDING_A_AFTER_X,
    ),
    Case(
        # A stream trimmed at the exporter's offset (MINID) tells a new queue as the capped one (MAXLEN) does.
        "with an exporter attached and no stream, the queue is new and every event is written once",
        ATTACHED,
        enqueue(placed("a"), placed("b")),
        after={
            **ATTACHED,
            Q.task("a"): task("pending"),
            Q.task("b"): task("pending"),
            Q.pending: ["b", "a"],
            Q.type_counts: counts(pending__email=2),
            Q.events: Stream([event("a", "", "pending"), event("b", "", "pending")]),
        },
    ),
    Case(
        "with an exporter attached and a stream, the queue is not new",
        ATTACHED | STREAM_X,
        enqueue(placed("a")),
        returns=False,
        after=ATTACHED | PENDING_A_AFTER_X,
    ),
)
def test_enqueue(r, redis_url, case):
    run_case(r, redis_url, case)


# One task with an id the client made, no unique key, due now and no barrier: the script's short path, which must
# write exactly what the general path writes; with anything else, or an exporter attached, it takes the general path.
@cases(
    Case(
        "one fresh task into a queue with a stream is not new",
        STREAM_X,
        enqueue(placed("a", fresh=True)),
        returns=False,
        after=PENDING_A_AFTER_X,
    ),
    Case(
        "one fresh task behind what is pending",
        EXISTING,
        enqueue(placed("b", fresh=True, task_type="sms")),
        after={
            **EXISTING,
            Q.task("b"): task("pending", type="sms"),
            Q.pending: ["b", "a"],
            Q.type_counts: counts(pending__email=1, pending__sms=1),
            Q.events: Stream([event("b", "", "pending", type="sms")]),
        },
    ),
    Case(
        "one fresh task names its actor in the event",
        {},
        lambda t: t.enqueue("default", [placed("a", fresh=True)], actor="w1"),
        after=PENDING_A | {Q.events: Stream([event("a", "", "pending", worker="w1")])},
    ),
    Case(
        "one fresh task with an exporter attached and no stream: the queue is new, its event written once",
        ATTACHED,
        enqueue(placed("a", fresh=True)),
        after=ATTACHED | PENDING_A,
    ),
    Case(
        "one fresh task with an exporter attached and a stream",
        ATTACHED | STREAM_X,
        enqueue(placed("a", fresh=True)),
        returns=False,
        after=ATTACHED | PENDING_A_AFTER_X,
    ),
    Case(
        "one fresh task due later is scheduled",
        {},
        enqueue(placed("a", at=NOW_MS + 1, fresh=True)),
        after=SCHEDULED_A,
    ),
    Case(
        "one fresh unique task takes its lock",
        {},
        enqueue(placed("a", unique=UNIQUE, ttl_ms=60_000, fresh=True)),
        after=PENDING_A | {Q.task("a"): task("pending", unique=UNIQUE), UNIQUE: Volatile("a")},
    ),
    Case(
        "one fresh unique task whose lock is held is refused",
        LOCKED,
        enqueue(placed("a", unique=UNIQUE, ttl_ms=1000, fresh=True)),
        returns=Refusal("DUPLICATE", 0),
    ),
    Case(
        "one fresh task behind a barrier set is refused",
        {BARRIER: Volatile("1")},
        lambda t: t.enqueue("default", [placed("a", fresh=True)], barrier="call-1"),
        raises=FailedPreconditionError,
    ),
)
def test_enqueue_one_fresh_task(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case("existing id", EXISTING, enqueue(placed("a")), returns=Refusal("CONFLICT", 0)),
    Case(
        "a refusal is raised as its named error unless the caller takes it as a reply",
        LOCKED,
        lambda t: t.enqueue("default", [placed("b"), placed("a", unique=UNIQUE, ttl_ms=1000)]),
        raises=DuplicateTaskError,
        detail='a unique task of type "email" with the same payload already holds its lock in queue "default"; '
        "nothing was enqueued",
    ),
    Case(
        "existing id refuses the whole batch",
        EXISTING,
        enqueue(placed("b"), placed("c"), placed("a")),
        returns=Refusal("CONFLICT", 2),
    ),
    Case("same id twice in a batch", {}, enqueue(placed("b"), placed("b")), returns=Refusal("CONFLICT", 1)),
    Case(
        "unique lock held",
        LOCKED,
        enqueue(placed("a", unique=UNIQUE, ttl_ms=1000)),
        returns=Refusal("DUPLICATE", 0),
    ),
    Case(
        "unique lock held refuses the whole batch",
        LOCKED,
        enqueue(placed("a"), placed("b", unique=UNIQUE, ttl_ms=1000)),
        returns=Refusal("DUPLICATE", 1),
    ),
    Case(
        "duplicate inside a batch",
        {},
        enqueue(placed("a", unique=UNIQUE, ttl_ms=1000), placed("b"), placed("c", unique=UNIQUE, ttl_ms=1000)),
        returns=Refusal("DUPLICATE", 2),
    ),
)
def test_enqueue_refused(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "a barrier not set lets the call through",
        {},
        lambda t: t.enqueue("default", [placed("a")], barrier="call-1"),
        after=PENDING_A,
    ),
    Case(
        "a barrier set refuses the call",
        {BARRIER: Volatile("1")},
        lambda t: t.enqueue("default", [placed("a")], barrier="call-1"),
        raises=FailedPreconditionError,
    ),
)
def test_enqueue_behind_a_barrier(r, redis_url, case):
    run_case(r, redis_url, case)


@pytest.mark.parametrize(
    ("seeded", "items", "refusal"),
    [
        pytest.param(EXISTING, [placed("b"), placed("a")], Refusal("CONFLICT", 1), id="conflict"),
        pytest.param(LOCKED, [placed("b", unique=UNIQUE, ttl_ms=1000)], Refusal("DUPLICATE", 0), id="duplicate"),
    ],
)
def test_a_refused_call_sets_its_barrier_and_writes_nothing_else(r, broker, seeded, items, refusal):
    """The one write of a refusal: the barrier, for a minute, so the calls of the same enqueue_many sent behind this
    one are refused too."""
    seed(r, seeded)
    call = broker.transitions.enqueue("default", items, barrier="call-1", refusal_as_reply=True)
    assert broker.run(call) == refusal
    assert_db(r, seeded | {BARRIER: Volatile("1")})
    assert 59_000 < r.pttl(BARRIER) <= 60_000


def test_enqueue_hash_holds_what_the_worker_reads(r, broker):
    """The stored fields are the ones dequeue hands back: type, options, payload (bytes untouched)."""
    message = TaskMessage(
        id="a",
        type="img",
        payload=b"\x00\xff raw",
        queue="default",
        created_ms=NOW_MS,
        max_retry=3,
        timeout=10.0,
        retention=60.0,
        headers={"k": "v"},
    )
    broker.run(broker.transitions.enqueue("default", [Placement(message)]))
    stored = r.hgetall(Q.task("a"))
    assert stored[b"payload"] == b"\x00\xff raw"
    assert TaskMessage.decode("a", "default", stored[b"type"], stored[b"payload"], stored[b"msg"]) == message
    assert Hash({k.decode(): v for k, v in stored.items()}).keys() == {"type", "msg", "payload", "state", "since"}
