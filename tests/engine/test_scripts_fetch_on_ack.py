"""State tables of fetch-on-ack: the ack scripts (done, complete) that lease the next tasks of their queue for the
slots they free, within the fence, the pause, the concurrency cap and the rate limit exactly as dequeue."""

from __future__ import annotations

from taskq.queues.engine.transitions import Acked, Dequeued, FetchNext, Leased, RateLimit

from .dbstate import Stream, Volatile, ZSet, hash_with, without
from .script_runs import Case, cases, run_case
from .task_state import DAY, NOW_MS, Q, counts, event, msg, task

W = "w1"
LEASE = NOW_MS + 5_000  # the seeded active tasks' lease expiry
NEW_LEASE = NOW_MS + 30_000  # the leases FetchNext asks for (30 s)
PAYLOAD = b'{"to":"ada"}'

# "a" and "b" active under this worker's leases, "c" and "d" pending (d the oldest).
ACKING = {
    Q.task("a"): task("active", since=NOW_MS - 1000, lease="tok-1"),
    Q.task("b"): task("active", since=NOW_MS - 1000, lease="tok-2"),
    Q.task("c"): task("pending", since=NOW_MS - 2000),
    Q.task("d"): task("pending", since=NOW_MS - 3000, retried=2),
    Q.pending: ["c", "d"],
    Q.lease: ZSet({"a": LEASE, "b": LEASE}),
    Q.type_counts: counts(active__email=2, pending__email=2),
}


def done(*leases: tuple[str, str], k: int, cap: int = 0, rate: RateLimit | None = None, ahead: int = 0):
    return lambda t: t.done("default", list(leases), W, then=FetchNext(k, 30, "new-", cap, rate, ahead))


def complete(*leases: tuple[str, str, float], k: int):
    return lambda t: t.complete("default", list(leases), W, then=FetchNext(k, 30, "new-"))


def leased(task_id: str, token: str) -> Leased:
    seeded = ACKING[Q.task(task_id)]
    retried, since = int(seeded.get("retried", 0)), int(seeded["since"])
    return Leased(task_id, b"email", msg().encode(), PAYLOAD, retried, token, since)


def acked(*statuses: str, leased: tuple[Leased, ...] = (), until_ms: int | None = None) -> Acked:
    return Acked(list(statuses), Dequeued(list(leased), None if until_ms is None else until_ms / 1000))


def processed(n: int) -> dict:
    return {Q.processed: str(n), Q.processed_on(DAY): Volatile(str(n))}


def started(task_id: str, token: str) -> dict:
    """The hash of a pending task of ACKING once leased by the ack."""
    return {Q.task(task_id): hash_with(ACKING[Q.task(task_id)], state="active", since=NOW_MS, lease=token)}


# "a" acknowledged (its hash deleted), then "d", the oldest pending, leased under new-1.
A_DONE_D_LEASED = (
    without(ACKING, Q.task("a"))
    | started("d", "new-1")
    | processed(1)
    | {
        Q.pending: ["c"],
        Q.lease: ZSet({"b": LEASE, "d": NEW_LEASE}),
        Q.type_counts: counts(active__email=2, pending__email=1, processed__email=1),
        Q.events: Stream(
            [event("a", "active", "done", worker=W), event("d", "pending", "active", worker=W, lease="new-1")]
        ),
    }
)

# "a" acknowledged, nothing leased: what an ack that fetches nothing leaves (a plain done).
A_DONE = (
    without(ACKING, Q.task("a"))
    | processed(1)
    | {
        Q.lease: ZSet({"b": LEASE}),
        Q.type_counts: counts(active__email=1, pending__email=2, processed__email=1),
        Q.events: Stream([event("a", "active", "done", worker=W)]),
    }
)


@cases(
    Case(
        "acknowledged, then the oldest pending task leased for the freed slot",
        ACKING,
        done(("a", "tok-1"), k=1),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "never more than the acks that went through, whatever k asks",
        ACKING,
        done(("a", "tok-1"), k=5),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "two acks free two slots",
        ACKING,
        done(("a", "tok-1"), ("b", "tok-2"), k=2),
        returns=acked("OK", "OK", leased=(leased("d", "new-1"), leased("c", "new-2"))),
        after=without(ACKING, Q.task("a"), Q.task("b"), Q.pending)
        | started("d", "new-1")
        | started("c", "new-2")
        | processed(2)
        | {
            Q.lease: ZSet({"d": NEW_LEASE, "c": NEW_LEASE}),
            Q.type_counts: counts(active__email=2, pending__email=0, processed__email=2),
            Q.events: Stream(
                [
                    event("a", "active", "done", worker=W),
                    event("b", "active", "done", worker=W),
                    event("d", "pending", "active", worker=W, lease="new-1"),
                    event("c", "pending", "active", worker=W, lease="new-2"),
                ]
            ),
        },
    ),
    Case(
        "ahead: the worker's prefetch is leased too once an ack went through",
        ACKING,
        done(("a", "tok-1"), k=1, ahead=1),
        returns=acked("OK", leased=(leased("d", "new-1"), leased("c", "new-2"))),
        after=without(ACKING, Q.task("a"), Q.pending)
        | started("d", "new-1")
        | started("c", "new-2")
        | processed(1)
        | {
            Q.lease: ZSet({"b": LEASE, "d": NEW_LEASE, "c": NEW_LEASE}),
            Q.type_counts: counts(active__email=3, pending__email=0, processed__email=1),
            Q.events: Stream(
                [
                    event("a", "active", "done", worker=W),
                    event("d", "pending", "active", worker=W, lease="new-1"),
                    event("c", "pending", "active", worker=W, lease="new-2"),
                ]
            ),
        },
    ),
    Case(
        "ahead alone (the slot went to a task already waiting in the worker): leased for the prefetch",
        ACKING,
        done(("a", "tok-1"), k=0, ahead=1),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "a stale ack leases nothing, not even ahead",
        ACKING,
        done(("a", "tok-0"), k=1, ahead=5),
        returns=acked("LEASE_LOST"),
    ),
    Case(
        "a stale ack leases nothing and changes nothing",
        ACKING,
        done(("a", "tok-0"), k=1),
        returns=acked("LEASE_LOST"),
    ),
    Case(
        "a stale ack in a batch frees no slot: only the acks that went through lease",
        ACKING,
        done(("a", "tok-1"), ("b", "stale"), k=2),
        returns=acked("OK", "LEASE_LOST", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "an unknown task leases nothing",
        ACKING,
        done(("nope", "tok-1"), k=1),
        returns=acked("NOT_FOUND"),
    ),
    Case(
        "paused: acknowledged, nothing leased",
        ACKING | {Q.paused: str(NOW_MS)},
        done(("a", "tok-1"), k=1),
        returns=acked("OK"),
        after=A_DONE | {Q.paused: str(NOW_MS)},
    ),
    Case(
        "nothing pending: acknowledged, nothing leased",
        without(ACKING, Q.task("c"), Q.task("d"), Q.pending) | {Q.type_counts: counts(active__email=2)},
        done(("a", "tok-1"), k=1),
        returns=acked("OK"),
        after=without(A_DONE, Q.task("c"), Q.task("d"), Q.pending)
        | {Q.type_counts: counts(active__email=1, processed__email=1)},
    ),
    Case(
        "k 0 is a plain done: the statuses alone",
        ACKING,
        done(("a", "tok-1"), k=0),
        returns=["OK"],
        after=A_DONE,
    ),
)
def test_done_then_lease(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "the cap is counted after the acknowledged task left the lease set",
        ACKING,
        done(("a", "tok-1"), k=1, cap=2),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "the cap bounds what is leased ahead as well",
        ACKING,
        done(("a", "tok-1"), k=1, cap=2, ahead=5),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED,
    ),
    Case(
        "at the cap once acknowledged (lowered while tasks ran): nothing leased",
        ACKING,
        done(("a", "tok-1"), k=1, cap=1),
        returns=acked("OK"),
        after=A_DONE,
    ),
    Case(
        "a cap of 2 with other workers' tasks active: only the room left",
        ACKING,
        done(("a", "tok-1"), ("b", "tok-2"), k=2, cap=1),
        returns=acked("OK", "OK", leased=(leased("d", "new-1"),)),
        after=without(ACKING, Q.task("a"), Q.task("b"))
        | started("d", "new-1")
        | processed(2)
        | {
            Q.pending: ["c"],
            Q.lease: ZSet({"d": NEW_LEASE}),
            Q.type_counts: counts(active__email=1, pending__email=1, processed__email=2),
            Q.events: Stream(
                [
                    event("a", "active", "done", worker=W),
                    event("b", "active", "done", worker=W),
                    event("d", "pending", "active", worker=W, lease="new-1"),
                ]
            ),
        },
    ),
    Case(
        "rate limit full: acknowledged, nothing leased, and the time of the next start",
        ACKING | {Q.starts: ZSet({"s1": NOW_MS - 900, "s2": NOW_MS - 500, "s3": NOW_MS - 1})},
        done(("a", "tok-1"), k=1, rate=RateLimit(3, 1.0)),
        returns=acked("OK", until_ms=NOW_MS + 100),
        after=A_DONE | {Q.starts: ZSet({"s1": NOW_MS - 900, "s2": NOW_MS - 500, "s3": NOW_MS - 1})},
    ),
    Case(
        "room in the rate window: the start is logged as dequeue logs it",
        ACKING | {Q.starts: ZSet({"gone": NOW_MS - 1000, "s1": NOW_MS - 400})},
        done(("a", "tok-1"), k=1, rate=RateLimit(2, 1.0)),
        returns=acked("OK", leased=(leased("d", "new-1"),), until_ms=NOW_MS + 600),
        after=A_DONE_D_LEASED | {Q.starts: Volatile(ZSet({"s1": NOW_MS - 400, "d@new-1": NOW_MS}))},
    ),
)
def test_done_then_lease_within_limits(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case(
        "kept as completed, then the oldest pending task leased",
        ACKING,
        complete(("a", "tok-1", 3600), k=1),
        returns=acked("OK", leased=(leased("d", "new-1"),)),
        after=A_DONE_D_LEASED
        | {
            Q.task("a"): hash_with(
                ACKING[Q.task("a")], drop=("lease",), state="completed", since=NOW_MS, completed_at=NOW_MS, ran_ms=""
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000}),
            Q.type_counts: counts(active__email=2, pending__email=1, completed__email=1, processed__email=1),
            Q.events: Stream(
                [event("a", "active", "completed", worker=W), event("d", "pending", "active", worker=W, lease="new-1")]
            ),
        },
    ),
    Case("a stale ack leases nothing", ACKING, complete(("a", "tok-0", 3600), k=1), returns=acked("LEASE_LOST")),
    Case(
        "paused: completed, nothing leased",
        ACKING | {Q.paused: str(NOW_MS)},
        complete(("a", "tok-1", 3600), k=1),
        returns=acked("OK"),
        after=A_DONE
        | {
            Q.paused: str(NOW_MS),
            Q.task("a"): hash_with(
                ACKING[Q.task("a")], drop=("lease",), state="completed", since=NOW_MS, completed_at=NOW_MS, ran_ms=""
            ),
            Q.completed: ZSet({"a": NOW_MS + 3_600_000}),
            Q.type_counts: counts(active__email=1, pending__email=2, completed__email=1, processed__email=1),
            Q.events: Stream([event("a", "active", "completed", worker=W)]),
        },
    ),
)
def test_complete_then_lease(r, redis_url, case):
    run_case(r, redis_url, case)
