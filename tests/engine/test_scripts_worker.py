"""State tables of the worker's scripts: dequeue, extend_lease, done, complete, retry, archive, requeue,
write_result. Every transition out of active is fenced by the lease token."""

from __future__ import annotations

from taskq.queues.engine import FailedPreconditionError, LeaseLostError, Limits, TaskNotFoundError
from taskq.queues.engine.transitions import ArchiveLimits, Dequeued, Leased, RateLimit

from .dbstate import Stream, Volatile, ZSet, hash_with, without
from .script_runs import Case, cases, run_case
from .task_state import DAY, NOW, NOW_MS, Q, acted, counts, event, failed_at, kept, msg, task, task_record

W = "w1"
LEASE = NOW_MS + 5_000  # the seeded tasks' lease expiry
UNIQUE = Q.unique("email", "d41d8cd98f00b204e9800998ecf8427e")
PAYLOAD = b'{"to":"ada"}'


def active(token: str = "tok-1", **extra) -> dict:
    return task("active", since=NOW_MS - 1000, lease=token, **extra)


# -- dequeue ------------------------------------------------------------------------------------------------------

PENDING = {
    Q.task("a"): task("pending", since=NOW_MS - 3000),
    Q.task("b"): task("pending", since=NOW_MS - 2000, retried=3),
    Q.task("c"): task("pending", since=NOW_MS - 1000),
    Q.pending: ["c", "b", "a"],
    Q.type_counts: counts(pending__email=3),
}


def dequeue(k: int, cap: int = 0, rate: RateLimit | None = None):
    return lambda t: t.dequeue("default", k, 30, W, "tok-", cap, rate)


def leased(task_id: str, token: str, retried: int = 0) -> Leased:
    """A task of PENDING as dequeue hands it out, with the time it became pending (for its wait time)."""
    since = int(PENDING[Q.task(task_id)]["since"])
    return Leased(task_id, b"email", msg().encode(), PAYLOAD, retried, token, since)


@cases(
    Case(
        "k oldest tasks under fresh leases",
        PENDING,
        dequeue(2),
        returns=[leased("a", "tok-1"), leased("b", "tok-2", retried=3)],
        after={
            Q.task("a"): hash_with(PENDING[Q.task("a")], state="active", since=NOW_MS, lease="tok-1"),
            Q.task("b"): hash_with(PENDING[Q.task("b")], state="active", since=NOW_MS, lease="tok-2"),
            Q.task("c"): PENDING[Q.task("c")],
            Q.pending: ["c"],
            Q.lease: ZSet({"a": NOW_MS + 30_000, "b": NOW_MS + 30_000}),
            Q.type_counts: counts(pending__email=1, active__email=2),
            Q.events: Stream(
                [
                    event("a", "pending", "active", worker=W, lease="tok-1"),
                    event("b", "pending", "active", worker=W, lease="tok-2"),
                ]
            ),
        },
    ),
    Case(
        "k beyond what is pending takes all",
        without(PENDING, Q.task("c"), Q.task("b")) | {Q.pending: ["a"], Q.type_counts: counts(pending__email=1)},
        dequeue(5),
        returns=[leased("a", "tok-1")],
        after={
            Q.task("a"): hash_with(PENDING[Q.task("a")], state="active", since=NOW_MS, lease="tok-1"),
            Q.lease: ZSet({"a": NOW_MS + 30_000}),
            Q.type_counts: counts(pending__email=0, active__email=1),
            Q.events: Stream([event("a", "pending", "active", worker=W, lease="tok-1")]),
        },
    ),
    Case("an id without a hash is dropped", {Q.pending: ["ghost"]}, dequeue(1), returns=[], after={}),
    Case("paused queue yields nothing", PENDING | {Q.paused: str(NOW_MS)}, dequeue(3), returns=[]),
    Case("empty queue yields nothing", {Q.type_counts: counts(pending__email=0)}, dequeue(3), returns=[]),
)
def test_dequeue(r, redis_url, case):
    run_case(r, redis_url, case)


# A queue with a concurrency cap and one task already active (held by another worker).
CAPPED = PENDING | {
    Q.task("z"): task("active", since=NOW_MS - 500, lease="other-1"),
    Q.lease: ZSet({"z": NOW_MS + 9_000}),
    Q.type_counts: counts(pending__email=3, active__email=1),
}


@cases(
    Case(
        "takes only up to the cap, counting other workers' active tasks",
        CAPPED,
        dequeue(3, cap=2),
        returns=[leased("a", "tok-1")],
        after=CAPPED
        | {
            Q.task("a"): hash_with(PENDING[Q.task("a")], state="active", since=NOW_MS, lease="tok-1"),
            Q.pending: ["c", "b"],
            Q.lease: ZSet({"z": NOW_MS + 9_000, "a": NOW_MS + 30_000}),
            Q.type_counts: counts(pending__email=2, active__email=2),
            Q.events: Stream([event("a", "pending", "active", worker=W, lease="tok-1")]),
        },
    ),
    Case("at the cap: nothing, the tasks wait in pending", CAPPED, dequeue(3, cap=1), returns=[]),
    Case(
        "over the cap (lowered while tasks ran): nothing",
        CAPPED
        | {
            Q.task("y"): task("active", since=NOW_MS - 500, lease="other-2"),
            Q.lease: ZSet({"z": NOW_MS + 9_000, "y": NOW_MS + 9_000}),
            Q.type_counts: counts(pending__email=3, active__email=2),
        },
        dequeue(3, cap=1),
        returns=[],
    ),
    Case(
        "a cap above what is pending takes what is pending",
        without(CAPPED, Q.task("b"), Q.task("c"))
        | {Q.pending: ["a"], Q.type_counts: counts(pending__email=1, active__email=1)},
        dequeue(5, cap=10),
        returns=[leased("a", "tok-1")],
        after={
            Q.task("z"): CAPPED[Q.task("z")],
            Q.task("a"): hash_with(PENDING[Q.task("a")], state="active", since=NOW_MS, lease="tok-1"),
            Q.lease: ZSet({"z": NOW_MS + 9_000, "a": NOW_MS + 30_000}),
            Q.type_counts: counts(pending__email=0, active__email=2),
            Q.events: Stream([event("a", "pending", "active", worker=W, lease="tok-1")]),
        },
    ),
    Case("paused wins over a free cap", CAPPED | {Q.paused: str(NOW_MS)}, dequeue(3, cap=5), returns=[]),
)
def test_dequeue_concurrency_cap(r, redis_url, case):
    run_case(r, redis_url, case)


# A queue with a rate limit of 3 per second: the starts set holds the recent starts of every worker (ms).
RATE = RateLimit(3, 1.0)


def starts(**ms_from_now: int) -> ZSet:
    return ZSet({token: NOW_MS + offset for token, offset in ms_from_now.items()})


def took(*tasks: str) -> dict:
    """PENDING after the oldest ``tasks`` went to active under tok-1, tok-2, ... (a, b and c in that order)."""
    state = dict(PENDING)
    for n, task_id in enumerate(tasks, 1):
        state[Q.task(task_id)] = hash_with(PENDING[Q.task(task_id)], state="active", since=NOW_MS, lease=f"tok-{n}")
    state[Q.pending] = ["c", "b", "a"][: 3 - len(tasks)]
    state[Q.lease] = ZSet({task_id: NOW_MS + 30_000 for task_id in tasks})
    state[Q.type_counts] = counts(pending__email=3 - len(tasks), active__email=len(tasks))
    state[Q.events] = Stream(
        [event(task_id, "pending", "active", worker=W, lease=f"tok-{n}") for n, task_id in enumerate(tasks, 1)]
    )
    return state


def limited(*items: Leased, until_ms: int | None) -> Dequeued:
    return Dequeued(list(items), None if until_ms is None else until_ms / 1000)


@cases(
    Case(
        "takes up to the limit; starts that left the window are dropped; the window is full after",
        PENDING | {Q.starts: starts(gone=-1000, s1=-400)},
        dequeue(3, rate=RATE),
        returns=limited(leased("a", "tok-1"), leased("b", "tok-2", retried=3), until_ms=NOW_MS + 600),
        after=took("a", "b") | {Q.starts: Volatile(starts(s1=-400, **{"a@tok-1": 0, "b@tok-2": 0}))},
    ),
    Case(
        "room left after the take: no time given",
        PENDING,
        dequeue(1, rate=RATE),
        returns=limited(leased("a", "tok-1"), until_ms=None),
        after=took("a") | {Q.starts: Volatile(starts(**{"a@tok-1": 0}))},
    ),
    Case(
        "at the limit: nothing, and the time of the next start",
        PENDING | {Q.starts: starts(s1=-900, s2=-500, s3=-1)},
        dequeue(3, rate=RATE),
        returns=limited(until_ms=NOW_MS + 100),
    ),
    Case(
        "over the limit (lowered): the window must drain below it",
        PENDING | {Q.starts: starts(s1=-900, s2=-500, s3=-300, s4=-200)},
        dequeue(3, rate=RateLimit(2, 1.0)),
        returns=limited(until_ms=NOW_MS + 700),
    ),
    Case(
        "a start stamped ahead of now (a clock running ahead) counts",
        PENDING | {Q.starts: starts(s1=-300, s2=200)},
        dequeue(3, rate=RateLimit(2, 1.0)),
        returns=limited(until_ms=NOW_MS + 700),
    ),
    Case(
        "a longer period counts further back",
        PENDING | {Q.starts: starts(s1=-50_000, s2=-1_500)},
        dequeue(3, rate=RateLimit(2, 60.0)),
        returns=limited(until_ms=NOW_MS + 10_000),
    ),
    Case(
        "a start exactly one period old has left the window",
        PENDING | {Q.starts: starts(s1=-1000, s2=-999)},
        dequeue(1, rate=RateLimit(2, 1.0)),
        returns=limited(leased("a", "tok-1"), until_ms=NOW_MS + 1),
        after=took("a") | {Q.starts: Volatile(starts(s2=-999, **{"a@tok-1": 0}))},
    ),
    Case(
        "room in the window but nothing pending: nothing written",
        {Q.starts: starts(s1=-500)},
        dequeue(3, rate=RATE),
        returns=limited(until_ms=None),
    ),
    Case(
        "paused: nothing, and no time (unpausing wakes the workers)",
        PENDING | {Q.paused: str(NOW_MS), Q.starts: starts(s1=-900, s2=-500, s3=-1)},
        dequeue(3, rate=RATE),
        returns=limited(until_ms=None),
    ),
    Case(
        "cap and rate limit together: the tighter wins",
        CAPPED,
        dequeue(3, cap=3, rate=RATE),
        returns=limited(leased("a", "tok-1"), leased("b", "tok-2", retried=3), until_ms=None),
        after=took("a", "b")
        | {
            Q.task("z"): CAPPED[Q.task("z")],
            Q.lease: ZSet({"z": NOW_MS + 9_000, "a": NOW_MS + 30_000, "b": NOW_MS + 30_000}),
            Q.type_counts: counts(pending__email=1, active__email=3),
            Q.starts: Volatile(starts(**{"a@tok-1": 0, "b@tok-2": 0})),
        },
    ),
    Case(
        "at the cap with room in the window: nothing, no time (a finished task frees the cap)",
        CAPPED | {Q.starts: starts(s1=-500)},
        dequeue(3, cap=1, rate=RATE),
        returns=limited(until_ms=None),
    ),
)
def test_dequeue_rate_limit(r, redis_url, case):
    run_case(r, redis_url, case)


# -- extend_lease -------------------------------------------------------------------------------------------------

TWO_ACTIVE = {
    Q.task("a"): active("tok-1"),
    Q.task("b"): active("tok-2"),
    Q.lease: ZSet({"a": LEASE, "b": LEASE}),
    Q.type_counts: counts(active__email=2),
}


def extend(*leases: tuple[str, str]):
    return lambda t: t.extend_leases("default", list(leases), 60)


@cases(
    Case(
        "held leases move forward",
        TWO_ACTIVE,
        extend(("a", "tok-1"), ("b", "tok-2")),
        returns=[],
        after=TWO_ACTIVE | {Q.lease: ZSet({"a": NOW_MS + 60_000, "b": NOW_MS + 60_000})},
    ),
    Case(
        "a lost lease is reported, the held one extended",
        TWO_ACTIVE,
        extend(("a", "stale"), ("b", "tok-2")),
        returns=["a"],
        after=TWO_ACTIVE | {Q.lease: ZSet({"a": LEASE, "b": NOW_MS + 60_000})},
    ),
    Case("a task gone is lost", TWO_ACTIVE, extend(("gone", "tok-3")), returns=["gone"]),
    Case(
        "a token whose lease entry is gone is lost and not re-added",
        {Q.task("a"): active("tok-1"), Q.type_counts: counts(active__email=1)},
        extend(("a", "tok-1")),
        returns=["a"],
    ),
)
def test_extend_lease(r, redis_url, case):
    run_case(r, redis_url, case)


# -- done and complete --------------------------------------------------------------------------------------------

ACTIVE_A = {
    Q.task("a"): active(unique=UNIQUE),
    Q.lease: ZSet({"a": LEASE}),
    UNIQUE: Volatile("a"),
    Q.type_counts: counts(active__email=1),
}
# A second task active beside "a", under its own token.
ACTIVE_AB = ACTIVE_A | {
    Q.task("b"): active("tok-2"),
    Q.lease: ZSet({"a": LEASE, "b": LEASE}),
    Q.type_counts: counts(active__email=2),
}
COUNTED = {Q.processed: "5", Q.processed_on(DAY): Volatile("5"), Q.failed: "2", Q.failed_on(DAY): Volatile("2")}


#: The trail of a task archived by a failure, then edited and run by an operator (mark_kept).
EDIT_TRAIL = [failed_at(NOW_MS - 60_000, "SMTP 550", "archived", ran_ms=1200), acted("edit", at=NOW_MS - 10_000)]


def done(*leases: tuple[str, str], started: tuple[float, ...] = ()):
    return lambda t: t.done("default", list(leases), W, started)


def complete(*leases: tuple[str, str, float], started: tuple[float, ...] = ()):
    return lambda t: t.complete("default", list(leases), W, started)


STARTED = NOW - 2.5  # when the worker says the attempt's handler started: it ran 2,500 ms


def a_done(processed: int) -> dict:
    """What acknowledging "a" writes: its count moved to processed, ``processed`` in all and today, its event."""
    return {
        Q.type_counts: counts(active__email=0, processed__email=1),
        Q.processed: str(processed),
        Q.processed_on(DAY): Volatile(str(processed)),
        Q.events: Stream([event("a", "active", "done", worker=W)]),
    }


@cases(
    Case(
        "deleted, lock released, counted",
        ACTIVE_A,
        done(("a", "tok-1")),
        returns=["OK"],
        after=a_done(1),  # a new daily counter gets its TTL
    ),
    Case(
        "counters add up",
        ACTIVE_A | COUNTED,
        done(("a", "tok-1")),
        returns=["OK"],
        after=COUNTED | a_done(6),
    ),
    Case(
        "a lock another task holds is kept",
        ACTIVE_A | {UNIQUE: Volatile("other")},
        done(("a", "tok-1")),
        returns=["OK"],
        after={UNIQUE: Volatile("other")} | a_done(1),
    ),
    Case(
        "each task fenced on its own",
        ACTIVE_AB,
        done(("b", "stale"), ("a", "tok-1")),
        returns=["LEASE_LOST", "OK"],
        after=a_done(1)
        | {
            Q.task("b"): active("tok-2"),
            Q.lease: ZSet({"b": LEASE}),
            Q.type_counts: counts(active__email=1, processed__email=1),
        },
    ),
    Case(
        "the handler's start goes into the event (the hash is gone)",
        ACTIVE_A,
        done(("a", "tok-1"), started=(STARTED,)),
        returns=["OK"],
        after=a_done(1) | {Q.events: Stream([event("a", "active", "done", worker=W, started=NOW_MS - 2500)])},
    ),
    Case("stale token", ACTIVE_A | COUNTED, done(("a", "tok-0")), returns=["LEASE_LOST"]),
    Case("unknown task", ACTIVE_A, done(("nope", "tok-1")), returns=["NOT_FOUND"]),
    Case(
        "task no longer active",
        {Q.task("a"): task("retry", lease="tok-1"), Q.retry: ZSet({"a": NOW_MS}), Q.lease: ZSet({"a": LEASE})},
        done(("a", "tok-1")),
        returns=["LEASE_LOST"],
    ),
    Case(
        # The hash's state and token are the fence (every script that takes a task out of the lease set changes its
        # state too): an entry missing anyway (evicted) does not keep a live attempt from acknowledging.
        "lease entry gone, the hash still active under the token",
        without(ACTIVE_A, Q.lease),
        done(("a", "tok-1")),
        returns=["OK"],
        after=a_done(1),
    ),
    Case(
        "the same attempt twice in one call: the second is refused as after the first",
        ACTIVE_A,
        done(("a", "tok-1"), ("a", "tok-1")),
        returns=["OK", "NOT_FOUND"],
        after=a_done(1),
    ),
    Case(
        "several tasks leave the lease set and are deleted in one call",
        ACTIVE_AB
        | {
            Q.task("c"): active("tok-3"),
            Q.lease: ZSet({"a": LEASE, "b": LEASE, "c": LEASE}),
            Q.type_counts: counts(active__email=3),
        },
        done(("a", "tok-1"), ("b", "tok-2")),
        returns=["OK", "OK"],
        after=a_done(2)
        | {
            Q.task("c"): active("tok-3"),
            Q.lease: ZSet({"c": LEASE}),
            Q.type_counts: counts(active__email=1, processed__email=2),
            Q.events: Stream([event("a", "active", "done", worker=W), event("b", "active", "done", worker=W)]),
        },
    ),
    Case(
        "a task an operator acted on leaves its record: its trail, how it ended, when its handler started",
        ACTIVE_A | {Q.task("a"): kept(active(unique=UNIQUE), EDIT_TRAIL[0], EDIT_TRAIL[1])},
        done(("a", "tok-1"), started=(STARTED,)),
        returns=["OK"],
        after=a_done(1)
        | {Q.events: Stream([event("a", "active", "done", worker=W, started=NOW_MS - 2500)])}
        | task_record("a", "done", EDIT_TRAIL, by=W, started=NOW_MS - 2500, ran_ms=2500),
    ),
    Case(
        "a failure since the operator's action (an automatic retry) joins the record's trail",
        ACTIVE_A
        | {
            Q.task("a"): kept(
                active(unique=UNIQUE, error="SMTP 451", failed_at=NOW_MS - 4000, ran_ms=90, retried=1),
                EDIT_TRAIL[0],
                EDIT_TRAIL[1],
            )
        },
        done(("a", "tok-1")),
        returns=["OK"],
        after=a_done(1)
        | task_record("a", "done", [*EDIT_TRAIL, failed_at(NOW_MS - 4000, "SMTP 451")], by=W, retried=1),
    ),
    Case(
        "of two in one call, only the marked task leaves a record",
        ACTIVE_AB | {Q.task("b"): kept(active("tok-2"), acted("run"))},
        done(("a", "tok-1"), ("b", "tok-2")),
        returns=["OK", "OK"],
        after=a_done(2)
        | {
            Q.type_counts: counts(active__email=0, processed__email=2),
            Q.events: Stream([event("a", "active", "done", worker=W), event("b", "active", "done", worker=W)]),
        }
        | task_record("b", "done", [acted("run")], by=W),
    ),
)
def test_done(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "kept until now + retention, lock released, counted",
        ACTIVE_A | COUNTED,
        complete(("a", "tok-1", 3600)),
        returns=["OK"],
        after=COUNTED
        | {
            Q.task("a"): hash_with(
                ACTIVE_A[Q.task("a")], drop=("lease",), state="completed", since=NOW_MS, completed_at=NOW_MS, ran_ms=""
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000}),
            Q.type_counts: counts(active__email=0, completed__email=1, processed__email=1),
            Q.processed: "6",
            Q.processed_on(DAY): Volatile("6"),
            Q.events: Stream([event("a", "active", "completed", worker=W)]),
        },
    ),
    Case(
        "a task an operator acted on keeps its mark while kept: the janitor's deletion leaves the record",
        ACTIVE_A | {Q.task("a"): kept(active(unique=UNIQUE), *EDIT_TRAIL)},
        complete(("a", "tok-1", 3600)),
        returns=["OK"],
        after={
            Q.task("a"): kept(
                hash_with(
                    active(unique=UNIQUE),
                    drop=("lease",),
                    state="completed",
                    since=NOW_MS,
                    completed_at=NOW_MS,
                    ran_ms="",
                ),
                *EDIT_TRAIL,
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000}),
            Q.type_counts: counts(active__email=0, completed__email=1, processed__email=1),
            Q.processed: "1",
            Q.processed_on(DAY): Volatile("1"),
            Q.events: Stream([event("a", "active", "completed", worker=W)]),
        },
    ),  # fmt: skip
    Case(
        "how long the attempt ran is kept, its start in the event",
        ACTIVE_A,
        complete(("a", "tok-1", 3600), started=(STARTED,)),
        returns=["OK"],
        after={
            Q.task("a"): hash_with(
                ACTIVE_A[Q.task("a")],
                drop=("lease",),
                state="completed",
                since=NOW_MS,
                completed_at=NOW_MS,
                ran_ms=2500,
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000}),
            Q.type_counts: counts(active__email=0, completed__email=1, processed__email=1),
            Q.processed: "1",
            Q.processed_on(DAY): Volatile("1"),
            Q.events: Stream([event("a", "active", "completed", worker=W, started=NOW_MS - 2500)]),
        },
    ),
    Case("stale token", ACTIVE_A, complete(("a", "tok-0", 3600)), returns=["LEASE_LOST"]),
    Case("unknown task", ACTIVE_A, complete(("nope", "tok-1", 3600)), returns=["NOT_FOUND"]),
    Case(
        "two tasks in one call, and the same attempt twice: the repeat is refused as after the first",
        ACTIVE_AB,
        complete(("a", "tok-1", 3600), ("b", "tok-2", 60), ("a", "tok-1", 3600)),
        returns=["OK", "OK", "LEASE_LOST"],
        after={
            Q.task("a"): hash_with(
                ACTIVE_A[Q.task("a")], drop=("lease",), state="completed", since=NOW_MS, completed_at=NOW_MS, ran_ms=""
            ),
            Q.task("b"): hash_with(
                active("tok-2"), drop=("lease",), state="completed", since=NOW_MS, completed_at=NOW_MS, ran_ms=""
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000, "b": NOW_MS + 60_000}),
            Q.type_counts: counts(active__email=0, completed__email=2, processed__email=2),
            Q.processed: "2",
            Q.processed_on(DAY): Volatile("2"),
            Q.events: Stream(
                [event("a", "active", "completed", worker=W), event("b", "active", "completed", worker=W)]
            ),
        },
    ),
)
def test_complete(r, redis_url, case):
    run_case(r, redis_url, case)


# -- retry and archive --------------------------------------------------------------------------------------------


def retry(
    token: str = "tok-1",
    *,
    is_failure: bool = True,
    expired_before: float | None = None,
    worker: str = W,
    started: float = 0.0,
):
    return lambda t: t.retry(
        "default",
        "a",
        token,
        NOW + 10,
        "boom",
        worker=worker,
        is_failure=is_failure,
        expired_before=expired_before,
        started=started,
    )


def failed_a(state: str, **fields: object):
    """Task "a" after a failed attempt of unknown start (no ran_ms) left it in ``state``, with ``fields``."""
    defaults = {"since": NOW_MS, "error": "boom", "failed_at": NOW_MS, "ran_ms": ""}
    return hash_with(ACTIVE_A[Q.task("a")], drop=("lease",), state=state, **(defaults | fields))


RETRIED = {  # what a failed attempt leaves; the unique lock stays with a task that will run again
    Q.task("a"): failed_a("retry", retried=1),
    Q.retry: ZSet({"a": NOW_MS + 10_000}),
    UNIQUE: Volatile("a"),
    Q.type_counts: counts(active__email=0, retry__email=1, processed__email=1, failed__email=1),
    Q.processed: "6",
    Q.processed_on(DAY): Volatile("6"),
    Q.failed: "3",
    Q.failed_on(DAY): Volatile("3"),
    Q.events: Stream([event("a", "active", "retry", worker=W, error="boom")]),
}
EXPIRED_A = ACTIVE_A | {Q.lease: ZSet({"a": NOW_MS - 1000})}


@cases(
    Case("a failure counts", ACTIVE_A | COUNTED, retry(), after=RETRIED),
    Case(
        "an error that is not a failure counts nothing",
        ACTIVE_A | COUNTED,
        retry(is_failure=False),
        after=COUNTED
        | {
            Q.task("a"): failed_a("retry"),
            Q.retry: ZSet({"a": NOW_MS + 10_000}),
            UNIQUE: Volatile("a"),
            Q.type_counts: counts(active__email=0, retry__email=1),
            Q.events: Stream([event("a", "active", "retry", worker=W, error="boom")]),
        },
    ),
    Case(
        "how long the attempt ran is kept, its start in the event",
        ACTIVE_A | COUNTED,
        retry(started=STARTED),
        after=RETRIED
        | {
            Q.task("a"): hash_with(RETRIED[Q.task("a")], ran_ms=2500),
            Q.events: Stream([event("a", "active", "retry", worker=W, error="boom", started=NOW_MS - 2500)]),
        },
    ),
    Case("recoverer: expired lease accepted", EXPIRED_A | COUNTED, retry(expired_before=NOW), after=RETRIED),
    Case(
        "recoverer: an earlier attempt's run time is dropped (this one's start is unknown)",
        EXPIRED_A | COUNTED | {Q.task("a"): hash_with(EXPIRED_A[Q.task("a")], ran_ms=900)},
        retry(expired_before=NOW),
        after=RETRIED,
    ),
    Case(
        "recoverer: lease expiring exactly now accepted",
        ACTIVE_A | COUNTED | {Q.lease: ZSet({"a": NOW_MS})},
        retry(expired_before=NOW),
        after=RETRIED,
    ),
    Case(
        "recoverer: live lease refused",
        ACTIVE_A | COUNTED,
        retry(expired_before=NOW),
        raises=FailedPreconditionError,
        detail="a",
    ),
    Case("stale token", ACTIVE_A | COUNTED, retry("tok-0"), raises=LeaseLostError, detail="a"),
    Case("unknown task", {}, retry(), raises=TaskNotFoundError, detail="a"),
    Case(
        "task not active",
        {Q.task("a"): task("pending", lease="tok-1"), Q.pending: ["a"]},
        retry(),
        raises=LeaseLostError,
    ),
    Case(  # the hash's state and token are the worker's fence (see done's case); the recoverer's reads the entry
        "lease entry gone, the hash still active under the token",
        without(ACTIVE_A, Q.lease) | COUNTED,
        retry(),
        after=RETRIED,
    ),
    Case("recoverer: lease entry gone", without(ACTIVE_A, Q.lease), retry(expired_before=NOW), raises=LeaseLostError),
)
def test_retry(r, redis_url, case):
    run_case(r, redis_url, case)


def archive(
    token: str = "tok-1",
    *,
    expired_before: float | None = None,
    own: ArchiveLimits | None = None,
    started: float = 0.0,
):
    return lambda t: t.archive(
        "default", "a", token, "boom", worker=W, expired_before=expired_before, archive_limits=own, started=started
    )


ARCHIVED_A = failed_a("archived", retried=1)
DEAD = {  # an archive of two, the older one still holding its unique lock
    Q.task("x1"): task("archived", since=NOW_MS - 61_000, unique=Q.unique("email", "x1")),
    Q.task("x2"): task("archived", since=NOW_MS - 60_000),
    Q.unique("email", "x1"): Volatile("x1"),
    Q.archived: ZSet({"x1": NOW_MS - 61_000, "x2": NOW_MS - 60_000}),
}
ONE_FAILURE = {Q.processed: "1", Q.processed_on(DAY): Volatile("1"), Q.failed: "1", Q.failed_on(DAY): Volatile("1")}
ARCHIVE_EVENT = event("a", "active", "archived", worker=W, error="boom")
TRIMMED = "trimmed from the archive"
# After archiving "a" into DEAD: the older of the two dead tasks trimmed, or both.
OLDEST_TRIMMED = ONE_FAILURE | {
    Q.task("a"): ARCHIVED_A,
    Q.task("x2"): DEAD[Q.task("x2")],
    Q.archived: ZSet({"x2": NOW_MS - 60_000, "a": NOW_MS}),
    Q.type_counts: counts(active__email=0, archived__email=2, processed__email=1, failed__email=1),
    Q.events: Stream([ARCHIVE_EVENT, event("x1", "archived", "deleted", worker=W, error=TRIMMED)]),
}
BOTH_TRIMMED = ONE_FAILURE | {
    Q.task("a"): ARCHIVED_A,
    Q.archived: ZSet({"a": NOW_MS}),
    Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
    Q.events: Stream(
        [
            ARCHIVE_EVENT,
            event("x1", "archived", "deleted", worker=W, error=TRIMMED),
            event("x2", "archived", "deleted", worker=W, error=TRIMMED),
        ]
    ),
}


def trimming(name: str, limits: Limits, after: dict, own: ArchiveLimits | None = None) -> Case:
    """Archiving "a" next to DEAD, the archive trimmed by the engine's ``limits`` and the queue's ``own``."""
    before = ACTIVE_A | DEAD | {Q.type_counts: counts(active__email=1, archived__email=2)}
    return Case(name, before, archive(own=own), limits=limits, after=after)


@cases(
    Case(
        "dead: lock released, counted",
        ACTIVE_A | COUNTED,
        archive(),
        after={
            Q.task("a"): ARCHIVED_A,
            Q.archived: ZSet({"a": NOW_MS}),
            Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
            Q.processed: "6",
            Q.processed_on(DAY): Volatile("6"),
            Q.failed: "3",
            Q.failed_on(DAY): Volatile("3"),
            Q.events: Stream([ARCHIVE_EVENT]),
        },
    ),
    Case(
        "a lock another task holds is kept",
        ACTIVE_A | {UNIQUE: Volatile("b")},
        archive(),
        after=ONE_FAILURE
        | {
            Q.task("a"): ARCHIVED_A,
            UNIQUE: Volatile("b"),
            Q.archived: ZSet({"a": NOW_MS}),
            Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
            Q.events: Stream([ARCHIVE_EVENT]),
        },
    ),
    trimming("trimmed to max size: the oldest is deleted for real", Limits(archive_max_size=2), OLDEST_TRIMMED),
    trimming("trimmed to max age: only what is older", Limits(archive_max_age=60.0), OLDEST_TRIMMED),
    trimming("trimmed by age, then by size", Limits(archive_max_size=1, archive_max_age=60.0), BOTH_TRIMMED),
    # max age unset by the queue: the engine's 1 s applies too and trims both
    trimming(
        "the queue's own limits win over the engine's",
        Limits(archive_max_size=100, archive_max_age=1.0),
        BOTH_TRIMMED,
        own=ArchiveLimits(max_size=2),
    ),
    trimming(
        "the queue's own size limit alone",
        Limits(archive_max_size=100),
        OLDEST_TRIMMED,
        own=ArchiveLimits(max_size=2, max_age=3600.0),
    ),
    Case(
        "recoverer: expired lease accepted",
        EXPIRED_A,
        archive(expired_before=NOW),
        after=ONE_FAILURE
        | {
            Q.task("a"): ARCHIVED_A,
            Q.archived: ZSet({"a": NOW_MS}),
            Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
            Q.events: Stream([ARCHIVE_EVENT]),
        },
    ),
    Case(
        "recoverer: live lease refused",
        ACTIVE_A,
        archive(expired_before=NOW),
        raises=FailedPreconditionError,
        detail="a",
    ),
    Case(
        "stale token",
        ACTIVE_A | DEAD,
        archive("tok-0"),
        raises=LeaseLostError,
        detail="a",
        limits=Limits(archive_max_size=0),
    ),
    Case("unknown task", DEAD, archive(), raises=TaskNotFoundError, detail="a"),
    Case(
        "how long the attempt ran is kept, its start in the event",
        ACTIVE_A,
        archive(started=STARTED),
        after=ONE_FAILURE
        | {
            Q.task("a"): hash_with(ARCHIVED_A, ran_ms=2500),
            Q.archived: ZSet({"a": NOW_MS}),
            Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
            Q.events: Stream([event("a", "active", "archived", worker=W, error="boom", started=NOW_MS - 2500)]),
        },
    ),
)
def test_archive(r, redis_url, case):
    run_case(r, redis_url, case)


# -- requeue and write_result -------------------------------------------------------------------------------------

WAITING = {Q.task("p"): task("pending", since=NOW_MS - 500), Q.pending: ["p"]}


def requeue(*leases: tuple[str, str]):
    return lambda t: t.requeue("default", list(leases), W)


@cases(
    Case(
        "back to the head of the line, nothing counted",
        ACTIVE_A | WAITING | {Q.type_counts: counts(active__email=1, pending__email=1)},
        requeue(("a", "tok-1")),
        returns=["OK"],
        after={
            **WAITING,
            Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], drop=("lease",), state="pending", since=NOW_MS),
            Q.pending: ["p", "a"],  # RPOP takes from the right: a runs next
            UNIQUE: Volatile("a"),
            Q.type_counts: counts(active__email=0, pending__email=2),
            Q.events: Stream([event("a", "active", "pending", worker=W, error="worker shut down")]),
        },
    ),
    Case("stale token", ACTIVE_A | WAITING, requeue(("a", "tok-0")), returns=["LEASE_LOST"]),
    Case("unknown task", WAITING, requeue(("a", "tok-1")), returns=["NOT_FOUND"]),
)
def test_requeue(r, redis_url, case):
    run_case(r, redis_url, case)


def write(field: str, value: bytes, token: str = "tok-1"):
    return lambda t: t.write_result("default", "a", token, field, value)


@cases(
    Case(
        "result",
        ACTIVE_A,
        write("result", b'{"ok":1}'),
        after=ACTIVE_A | {Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], result='{"ok":1}')},
    ),
    Case(
        "progress",
        ACTIVE_A,
        write("progress", b"3/10"),
        after=ACTIVE_A | {Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], progress="3/10")},
    ),
    Case(
        "journal",
        ACTIVE_A,
        write("journal", b'[{"worker":"w1"}]'),
        after=ACTIVE_A | {Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], journal='[{"worker":"w1"}]')},
    ),
    Case("stale token", ACTIVE_A, write("result", b"zombie", token="tok-0"), raises=LeaseLostError, detail="a"),
    Case("unknown task", {}, write("result", b"x"), raises=TaskNotFoundError, detail="a"),
    Case("only result, progress or journal", ACTIVE_A, write("state", b"completed"), raises=FailedPreconditionError),
)
def test_write_result(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "an orphaned lease entry is dropped",
        {Q.lease: ZSet({"gone": NOW_MS - 1000})},
        lambda t: t.drop_lease("default", "gone"),
        after={},
    ),
    Case(
        "a lease whose task exists is kept",
        {Q.lease: ZSet({"a": NOW_MS - 1000}), Q.task("a"): task("active")},
        lambda t: t.drop_lease("default", "a"),
        raises=FailedPreconditionError,
        detail="task exists",
    ),
)
def test_drop_lease(r, redis_url, case):
    run_case(r, redis_url, case)
