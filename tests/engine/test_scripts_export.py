"""Table tests of the exporter's scripts (lease, attach, commit) and of how every transition trims the event
stream once an exporter is attached (MINID at its committed offset instead of MAXLEN)."""

from __future__ import annotations

from taskq.queues.engine import FailedPreconditionError, Keys
from taskq.queues.engine.scripts import script
from taskq.queues.engine.transitions import Call

from .dbstate import Hash, Stream, Volatile, ZSet
from .script_runs import Case, cases, run_case
from .task_state import DAY, NOW_MS, Q, counts, event, task

KEYS = Keys()
OFFSET = Q.event_offset
LEASE_KEY = KEYS.export_lease


def lease(holder: str, ttl_ms: int):
    return lambda t: Call("export.acquire", script("export_lease"), [LEASE_KEY], [holder, ttl_ms])


def attach(cap: int):
    return lambda t: Call("export.attach", script("export_attach"), [OFFSET], [cap])


def commit(stream_id: str):
    return lambda t: Call("export.commit", script("export_commit"), [OFFSET], [stream_id])


def offset(committed: str, cap: str = "9") -> dict:
    """The queue's exporter offset hash, committed up to ``committed``."""
    return {OFFSET: Hash({"committed": committed, "cap": cap})}


@cases(
    Case("a free lease is taken", {}, lease("a1", 15_000), returns=1, after={LEASE_KEY: Volatile("a1")}),
    Case(
        "the holder extends it",
        {LEASE_KEY: Volatile("a1")},
        lease("a1", 15_000),
        returns=1,
        after={LEASE_KEY: Volatile("a1")},
    ),
    Case("another holder is refused", {LEASE_KEY: Volatile("a1")}, lease("a2", 15_000), returns=0),
    Case("the holder releases it", {LEASE_KEY: Volatile("a1")}, lease("a1", 0), returns=1, after={}),
    Case("others cannot release it", {LEASE_KEY: Volatile("a1")}, lease("a2", 0), returns=0),
)
def test_export_lease(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case("a new queue starts at 0-0", {}, attach(1000), returns=b"0-0", after=offset("0-0", "1000")),
    Case(
        "an existing offset is kept, the cap updated",
        offset("5-1"),
        attach(1000),
        returns=b"5-1",
        after=offset("5-1", "1000"),
    ),
)
def test_export_attach(r, redis_url, case):
    run_case(r, redis_url, case)


@cases(
    Case("moves forward", offset("5-1"), commit("10-0"), after=offset("10-0")),
    Case("same id is a no-op", offset("5-1"), commit("5-1"), after=offset("5-1")),
    Case(
        "never moves back (numeric, not string, order)",
        offset("10-0"),
        commit("9-5"),
        raises=FailedPreconditionError,
        detail="offset 9-5 is behind 10-0",
    ),
    Case("not attached", {}, commit("1-0"), raises=FailedPreconditionError, detail="no exporter attached"),
    Case("malformed id", offset("0-0"), commit("x"), raises=FailedPreconditionError, detail="malformed stream id x"),
)
def test_export_commit(r, redis_url, case):
    run_case(r, redis_url, case)


ACTIVE = {
    Q.task("a"): task("active", since=NOW_MS - 1000, lease="tok-1"),
    Q.lease: ZSet({"a": NOW_MS + 5000}),
    Q.type_counts: counts(active__email=1),
}
DONE = {
    Q.type_counts: counts(active__email=0, processed__email=1),
    Q.processed: "1",
    Q.processed_on(DAY): Volatile("1"),
}


@cases(
    Case(
        "attached: the offset is read and left as it is",
        ACTIVE
        | {
            OFFSET: Hash({"committed": "0-0", "cap": "1000"}),
            Q.events: Stream([event("x", "", "pending"), event("y", "", "pending")]),
        },
        lambda t: t.done("default", [("a", "tok-1")], "w1"),
        returns=["OK"],
        after=DONE
        | {
            OFFSET: Hash({"committed": "0-0", "cap": "1000"}),
            Q.events: Stream(
                [event("x", "", "pending"), event("y", "", "pending"), event("a", "active", "done", worker="w1")]
            ),
        },
    ),
)
def test_transitions_with_an_export_attached(r, redis_url, case):
    run_case(r, redis_url, case)
