"""The asynq worker's transitions, table-driven: seed every key, run one operation, compare every key of the
database; a refused precondition changes nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.keys import ALL_SERVERS, ALL_WORKERS, AsynqQueueKeys, server_info_key, workers_key
from taskq.queues.engine.asynq.wire import Timestamp, WireServer, WireTask, WireWorker
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore, Dequeued
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import FakeClock
from taskq.queues.engine.errors import EngineError, LeaseLostError, TaskNotFoundError, ValidationError
from tests.engine.dbstate import Hash, Set, Volatile, ZSet, assert_db, dump, seed

#: The store's clock stands still at this second. Not a fixed date: the daily counters expire 90 days after it
#: (EXPIREAT, as asynq's), and an expiry in the past would delete them at once.
NOW = float(int(time.time()))
Q = AsynqQueueKeys("default")
OTHER = AsynqQueueKeys("other")
THIRD = AsynqQueueKeys("third")
TODAY = datetime.fromtimestamp(NOW, UTC)
STATS_EXPIRY = int(NOW) + 90 * 86400
MAX_INT64 = str(2**63 - 1)
NS = int(NOW * 1e9)


def message(task_id: str = "a", queue: str = "default", **fields: Any) -> WireTask:
    return WireTask(type="email", payload=b'{"to":1}', id=task_id, queue=queue, retry=3, **fields)


def text(data: bytes) -> str | bytes:
    """A value as ``dump`` shows it: text when it is UTF-8, else bytes."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


def task(msg: WireTask, state: str, **extra: Any) -> Hash:
    return Hash({"msg": text(msg.encode()), "state": state, **{k: str(v) for k, v in extra.items()}})


def active(*msgs: WireTask, lease: float = NOW + 10, q: AsynqQueueKeys = Q) -> dict[str, Any]:
    """Tasks that a worker runs: in active, with a lease, their hashes in state active."""
    state: dict[str, Any] = {q.active: [m.id for m in msgs], q.lease: ZSet({m.id: lease for m in msgs})}
    state.update({q.task(m.id): task(m, "active") for m in msgs})
    return state


def counted(processed: int = 1, failed: int = 0) -> dict[str, Any]:
    """The daily and total counters after that many processed and failed tasks of today."""
    state: dict[str, Any] = {Q.processed(TODAY): Volatile(str(processed)), Q.processed_total: str(processed)}
    if failed:
        state |= {Q.failed(TODAY): Volatile(str(failed)), Q.failed_total: str(failed)}
    return state


A = message("a")
UNIQUE = Q.unique("email", A.payload)
A_UNIQUE = message("a", unique_key=UNIQUE)
FAILED_ONCE = replace(A, retried=1, error_msg="boom", last_failed_at=int(NOW))


@dataclass
class Case:
    name: str
    seed: dict[str, Any]
    act: Callable[[AsynqWorkerStore], Any]
    expected: dict[str, Any] | None = None  # None: unchanged (with ``error``)
    returns: Any = None
    error: type[EngineError] | None = None


CASES = [
    # -- dequeue -------------------------------------------------------------------------------------------------
    Case(
        "dequeue takes the oldest pending task, with a lease",
        {
            Q.pending: ["b", "a"],
            Q.task("a"): task(A, "pending", pending_since=NS),
            Q.task("b"): task(message("b"), "pending"),
        },
        lambda s: s.dequeue(["default"]),
        {
            Q.pending: ["b"],
            Q.task("b"): task(message("b"), "pending"),
            Q.active: ["a"],
            Q.lease: ZSet({"a": NOW + 30}),
            Q.task("a"): task(A, "active"),
        },
        returns=Dequeued(A, NOW + 30),
    ),
    Case(
        "dequeue skips a paused queue and an empty one, in the order given",
        {
            OTHER.paused: "1",
            OTHER.pending: ["o"],
            OTHER.task("o"): task(message("o", "other"), "pending"),
            Q.pending: ["a"],
            Q.task("a"): task(A, "pending"),
        },
        lambda s: s.dequeue(["other", "empty", "default"], lease_seconds=5),
        {
            OTHER.paused: "1",
            OTHER.pending: ["o"],
            OTHER.task("o"): task(message("o", "other"), "pending"),
            Q.active: ["a"],
            Q.lease: ZSet({"a": NOW + 5}),
            Q.task("a"): task(A, "active"),
        },
        returns=Dequeued(A, NOW + 5),
    ),
    Case("dequeue of empty queues gives None", {}, lambda s: s.dequeue(["default", "other"]), {}, returns=None),
    Case(
        "dequeue drops an id whose task is gone and takes the next",
        {Q.pending: ["a", "gone"], Q.task("a"): task(A, "pending")},
        lambda s: s.dequeue(["default"]),
        {Q.active: ["a"], Q.lease: ZSet({"a": NOW + 30}), Q.task("a"): task(A, "active")},
        returns=Dequeued(A, NOW + 30),
    ),
    Case(
        "dequeue archives a message that cannot be decoded, as it is",
        {
            Q.pending: ["a", "bad"],
            Q.task("a"): task(A, "pending"),
            Q.task("bad"): Hash({"msg": "\x0a\x7f", "state": "pending"}),
        },
        lambda s: s.dequeue(["default"]),
        {
            Q.task("bad"): Hash({"msg": "\x0a\x7f", "state": "archived"}),
            Q.archived: ZSet({"bad": NOW}),
            Q.active: ["a"],
            Q.lease: ZSet({"a": NOW + 30}),
            Q.task("a"): task(A, "active"),
        }
        | counted(1, 1),
        returns=Dequeued(A, NOW + 30),
    ),
    # -- done ----------------------------------------------------------------------------------------------------
    Case(
        "done deletes the task and counts it",
        active(A, message("b")),
        lambda s: s.done(A),
        {Q.active: ["b"], Q.lease: ZSet({"b": NOW + 10}), Q.task("b"): task(message("b"), "active")} | counted(),
    ),
    Case(
        "done releases the unique lock the task holds",
        active(A_UNIQUE) | {UNIQUE: Volatile("a")},
        lambda s: s.done(A_UNIQUE),
        counted(),
    ),
    Case(
        "done leaves a unique lock another task holds",
        active(A_UNIQUE) | {UNIQUE: Volatile("other")},
        lambda s: s.done(A_UNIQUE),
        {UNIQUE: Volatile("other")} | counted(),
    ),
    Case(
        "done adds to today's counter and starts the total again past the largest int64",
        active(A) | {Q.processed(TODAY): Volatile("4"), Q.processed_total: MAX_INT64},
        lambda s: s.done(A),
        {Q.processed(TODAY): Volatile("5"), Q.processed_total: "1"},
    ),
    Case(
        "done of a task no longer active is refused",
        {Q.retry: ZSet({"a": NOW}), Q.task("a"): task(A, "retry")},
        lambda s: s.done(A),
        error=LeaseLostError,
    ),
    Case(
        "done of a task in active without its lease is refused",
        {Q.active: ["a"], Q.task("a"): task(A, "active")},
        lambda s: s.done(A),
        error=LeaseLostError,
    ),
    Case(
        "done of a task that is gone is refused",
        {Q.active: ["a"], Q.lease: ZSet({"a": NOW})},
        lambda s: s.done(A),
        error=TaskNotFoundError,
    ),
    # -- mark_complete -------------------------------------------------------------------------------------------
    Case(
        "mark_complete keeps the task for its retention, stamped, and releases its lock",
        active(replace(A_UNIQUE, retention=3600)) | {UNIQUE: Volatile("a")},
        lambda s: s.mark_complete(replace(A_UNIQUE, retention=3600)),
        {
            Q.completed: ZSet({"a": NOW + 3600}),
            Q.task("a"): task(replace(A_UNIQUE, retention=3600, completed_at=int(NOW)), "completed"),
        }
        | counted(),
    ),
    Case(
        "mark_complete of a task no longer active is refused",
        {Q.task("a"): task(A, "pending"), Q.pending: ["a"]},
        lambda s: s.mark_complete(A),
        error=LeaseLostError,
    ),
    # -- retry ---------------------------------------------------------------------------------------------------
    Case(
        "retry of a failure counts it and sets when it runs again",
        active(A_UNIQUE) | {UNIQUE: Volatile("a")},
        lambda s: s.retry(A_UNIQUE, NOW + 60.7, "boom"),
        {
            Q.retry: ZSet({"a": NOW + 60}),
            Q.task("a"): task(replace(FAILED_ONCE, unique_key=UNIQUE), "retry"),
            UNIQUE: Volatile("a"),  # asynq keeps the lock through retries
        }
        | counted(1, 1),
    ),
    Case(
        "retry of an error that is not a failure counts nothing",
        active(A),
        lambda s: s.retry(A, NOW + 5, "busy", is_failure=False),
        {
            Q.retry: ZSet({"a": NOW + 5}),
            Q.task("a"): task(replace(A, error_msg="busy", last_failed_at=int(NOW)), "retry"),
        },
    ),
    Case("retry of a task that is gone is refused", {}, lambda s: s.retry(A, NOW, "boom"), error=TaskNotFoundError),
    # -- archive -------------------------------------------------------------------------------------------------
    Case(
        "archive keeps the task with its error and trims what is older than 90 days",
        active(A)
        | {
            Q.archived: ZSet({"old": NOW - 91 * 86400, "new": NOW - 86400}),
            Q.task("old"): task(message("old"), "archived"),
            Q.task("new"): task(message("new"), "archived"),
        },
        lambda s: s.archive(A, "gave up"),
        {
            Q.archived: ZSet({"new": NOW - 86400, "a": NOW}),
            Q.task("new"): task(message("new"), "archived"),
            Q.task("a"): task(replace(A, error_msg="gave up", last_failed_at=int(NOW)), "archived"),
        }
        | counted(1, 1),
    ),
    Case(
        "archive of a task no longer active is refused",
        {Q.task("a"): task(A, "archived"), Q.archived: ZSet({"a": 1})},
        lambda s: s.archive(A, "x"),
        error=LeaseLostError,
    ),
    # -- requeue -------------------------------------------------------------------------------------------------
    Case(
        "requeue puts the task back at the head of pending, to run next",
        active(A) | {Q.pending: ["b"], Q.task("b"): task(message("b"), "pending")},
        lambda s: s.requeue(A),
        {Q.pending: ["b", "a"], Q.task("b"): task(message("b"), "pending"), Q.task("a"): task(A, "pending")},
    ),
    Case(
        "requeue of a task the recoverer moved to retry is refused",
        {Q.task("a"): task(FAILED_ONCE, "retry"), Q.retry: ZSet({"a": NOW + 20})},
        lambda s: s.requeue(A),
        error=LeaseLostError,
    ),
    # -- extend_leases -------------------------------------------------------------------------------------------
    Case(
        "extend_leases moves the leases that are there, and makes none again",
        active(A, message("b")),
        lambda s: s.extend_leases("default", ["a", "gone"], 30),
        active(A, message("b")) | {Q.lease: ZSet({"a": NOW + 30, "b": NOW + 10})},
        returns=NOW + 30,
    ),
    # -- write_result --------------------------------------------------------------------------------------------
    Case(
        "write_result writes the result field",
        active(A),
        lambda s: s.write_result("default", "a", b"\x00ok"),
        active(A) | {Q.task("a"): task(A, "active", result="\x00ok")},
        returns=3,
    ),
    Case(
        "write_result of a task that is gone is refused",
        {},
        lambda s: s.write_result("default", "a", b"x"),
        error=TaskNotFoundError,
    ),
    # -- forward -------------------------------------------------------------------------------------------------
    Case(
        "forward moves due scheduled and retry tasks to pending, or into their group",
        {
            Q.scheduled: ZSet({"a": NOW, "later": NOW + 1}),
            Q.task("a"): task(A, "scheduled"),
            Q.task("later"): task(message("later"), "scheduled"),
            Q.retry: ZSet({"g": NOW - 5}),
            Q.task("g"): task(message("g"), "retry", group="batch"),
        },
        lambda s: s.forward(["default", "other"]),
        {
            Q.scheduled: ZSet({"later": NOW + 1}),
            Q.task("later"): task(message("later"), "scheduled"),
            Q.pending: ["a"],
            Q.task("a"): task(A, "pending", pending_since=NS),
            Q.group("batch"): ZSet({"g": NOW}),
            Q.groups: Set({"batch"}),
            Q.task("g"): task(message("g"), "aggregating", group="batch"),
        },
        returns=2,
    ),
    # -- lease_expired -------------------------------------------------------------------------------------------
    Case(
        "lease_expired reads the messages of leases ended by the cutoff, and changes nothing",
        active(A, lease=NOW - 40) | active(message("o", "other"), lease=NOW - 31, q=OTHER),
        lambda s: s.lease_expired(["default", "other"], NOW - 30),
        active(A, lease=NOW - 40) | active(message("o", "other"), lease=NOW - 31, q=OTHER),
        returns=[A, message("o", "other")],
    ),
    # -- delete_expired_completed ----------------------------------------------------------------------------------
    Case(
        "delete_expired_completed deletes the tasks whose retention ended, batch after batch",
        {
            Q.completed: ZSet({"a": NOW - 1, "b": NOW, "kept": NOW + 1}),
            Q.task("a"): task(A, "completed"),
            Q.task("b"): task(message("b"), "completed"),
            Q.task("kept"): task(message("kept"), "completed"),
        },
        lambda s: s.delete_expired_completed("default", batch=1),
        {Q.completed: ZSet({"kept": NOW + 1}), Q.task("kept"): task(message("kept"), "completed")},
        returns=2,
    ),
    # -- bad input -----------------------------------------------------------------------------------------------
    Case(
        "dequeue_many takes up to the count from the first queue, oldest first, each with its lease",
        {
            Q.pending: ["c", "b", "a"],
            Q.task("a"): task(A, "pending", pending_since=NS),
            Q.task("b"): task(message("b"), "pending", pending_since=NS),
            Q.task("c"): task(message("c"), "pending"),
        },
        lambda s: s.dequeue_many(["default"], 2),
        {
            Q.pending: ["c"],
            Q.task("c"): task(message("c"), "pending"),
            Q.active: ["b", "a"],
            Q.lease: ZSet({"a": NOW + 30, "b": NOW + 30}),
            Q.task("a"): task(A, "active"),
            Q.task("b"): task(message("b"), "active"),
        },
        returns=[Dequeued(A, NOW + 30), Dequeued(message("b"), NOW + 30)],
    ),
    Case(
        "dequeue_many tops up from the next queues in the order given, skipping a paused one",
        {
            Q.pending: ["a"],
            Q.task("a"): task(A, "pending"),
            OTHER.paused: "1",
            OTHER.pending: ["o"],
            OTHER.task("o"): task(message("o", "other"), "pending"),
            THIRD.pending: ["y", "x"],
            THIRD.task("x"): task(message("x", "third"), "pending"),
            THIRD.task("y"): task(message("y", "third"), "pending"),
        },
        lambda s: s.dequeue_many(["default", "other", "third"], 4, lease_seconds=5),
        {
            Q.active: ["a"],
            Q.lease: ZSet({"a": NOW + 5}),
            Q.task("a"): task(A, "active"),
            OTHER.paused: "1",
            OTHER.pending: ["o"],
            OTHER.task("o"): task(message("o", "other"), "pending"),
            THIRD.active: ["y", "x"],
            THIRD.lease: ZSet({"x": NOW + 5, "y": NOW + 5}),
            THIRD.task("x"): task(message("x", "third"), "active"),
            THIRD.task("y"): task(message("y", "third"), "active"),
        },
        returns=[
            Dequeued(A, NOW + 5),
            Dequeued(message("x", "third"), NOW + 5),
            Dequeued(message("y", "third"), NOW + 5),
        ],
    ),
    Case(
        "dequeue_many archives a message that cannot be decoded and takes another in its place",
        {
            Q.pending: ["b", "gone", "bad", "a"],
            Q.task("a"): task(A, "pending"),
            Q.task("b"): task(message("b"), "pending"),
            Q.task("bad"): Hash({"msg": "\x0a\x7f", "state": "pending"}),
        },
        lambda s: s.dequeue_many(["default"], 2),
        {
            Q.task("bad"): Hash({"msg": "\x0a\x7f", "state": "archived"}),
            Q.archived: ZSet({"bad": NOW}),
            Q.active: ["b", "a"],
            Q.lease: ZSet({"a": NOW + 30, "b": NOW + 30}),
            Q.task("a"): task(A, "active"),
            Q.task("b"): task(message("b"), "active"),
        }
        | counted(1, 1),
        returns=[Dequeued(A, NOW + 30), Dequeued(message("b"), NOW + 30)],
    ),
    Case(
        "dequeue_many of a count of none is refused",
        {Q.pending: ["a"], Q.task("a"): task(A, "pending")},
        lambda s: s.dequeue_many(["default"], 0),
        error=ValidationError,
    ),
    Case(
        "write_and_dequeue writes the outcome and dequeues the next task in one round trip",
        active(A) | {Q.pending: ["b"], Q.task("b"): task(message("b"), "pending", pending_since=NS)},
        lambda s: s.write_and_dequeue(s.done_call(A), "default"),
        {
            Q.active: ["b"],
            Q.lease: ZSet({"b": NOW + 30}),
            Q.task("b"): task(message("b"), "active"),
        }
        | counted(1),
        returns=(None, [Dequeued(message("b"), NOW + 30)]),
    ),
    Case(
        "write_and_dequeue on a paused queue writes the outcome and dequeues nothing",
        active(A) | {Q.paused: "1", Q.pending: ["b"], Q.task("b"): task(message("b"), "pending")},
        lambda s: s.write_and_dequeue(s.retry_call(A, NOW + 60, "boom"), "default"),
        {
            Q.paused: "1",
            Q.pending: ["b"],
            Q.task("b"): task(message("b"), "pending"),
            Q.retry: ZSet({"a": NOW + 60}),
            Q.task("a"): task(FAILED_ONCE, "retry"),
        }
        | counted(1, 1),
        returns=(None, []),
    ),
    Case(
        "write_and_dequeue of a queue name that is no string is refused before anything is sent",
        active(A),
        lambda s: s.write_and_dequeue(s.done_call(A), ""),
        error=ValidationError,
    ),
    Case(
        "a message without a queue is refused", active(A), lambda s: s.done(replace(A, queue="")), error=ValidationError
    ),
    Case(
        "a message without an id is refused",
        active(A),
        lambda s: s.archive(replace(A, id=""), "x"),
        error=ValidationError,
    ),
    Case(
        "a lease of no time is refused",
        {Q.pending: ["a"], Q.task("a"): task(A, "pending")},
        lambda s: s.dequeue(["default"], lease_seconds=0),
        error=ValidationError,
    ),
    Case(
        "a queue name given as a bare string is refused",
        {Q.pending: ["a"], Q.task("a"): task(A, "pending")},
        lambda s: s.dequeue("default"),  # type: ignore[arg-type]
        error=ValidationError,
    ),
    Case(
        "a retry at no time is refused",
        active(A),
        lambda s: s.retry(A, float("nan"), "boom"),
        error=ValidationError,
    ),
    Case(
        "a batch of none is refused",
        {},
        lambda s: s.delete_expired_completed("default", batch=0),
        error=ValidationError,
    ),
]


@pytest.fixture
def store(r: redis.Redis, redis_url: str) -> Iterator[AsynqWorkerStore]:
    broker = Broker(redis_url, clock=FakeClock(NOW))
    yield AsynqWorkerStore(broker)
    broker.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_transition(case: Case, store: AsynqWorkerStore, r: redis.Redis) -> None:
    seed(r, case.seed)
    before = dump(r)
    if case.error is not None:
        with pytest.raises(case.error):
            case.act(store)
        assert_db(r, before)
        return
    assert case.act(store) == case.returns
    assert_db(r, case.expected or {})


def test_write_and_dequeue_returns_a_refused_write_and_still_hands_out_the_task_it_dequeued(
    store: AsynqWorkerStore, r: redis.Redis
) -> None:
    """The outcome of a task an operator deleted meanwhile is refused, changing nothing; the task dequeued in the
    same round trip is handed out with its lease, never dropped."""
    seed(r, {Q.pending: ["b"], Q.task("b"): task(message("b"), "pending")})
    error, dequeued = store.write_and_dequeue(store.done_call(A), "default")
    assert isinstance(error, TaskNotFoundError)
    assert dequeued == [Dequeued(message("b"), NOW + 30)]
    assert_db(r, {Q.active: ["b"], Q.lease: ZSet({"b": NOW + 30}), Q.task("b"): task(message("b"), "active")})


def test_forward_moves_more_than_one_batch(store: AsynqWorkerStore, r: redis.Redis) -> None:
    ids = [f"t{n}" for n in range(250)]
    r.zadd(Q.scheduled, dict.fromkeys(ids, NOW - 1))
    for task_id in ids:
        r.hset(Q.task(task_id), mapping={"msg": message(task_id).encode(), "state": "scheduled"})
    assert store.forward(["default"]) == 250
    assert r.llen(Q.pending) == 250 and not r.exists(Q.scheduled)


def test_archive_trims_to_asynq_size(store: AsynqWorkerStore, r: redis.Redis) -> None:
    """asynq's size trim (ZRANGE 0 -10000) leaves 9,999 tasks, the newest, and deletes the others' hashes."""
    old = {f"old{n}": NOW - 10_000 + n for n in range(10_000)}
    r.zadd(Q.archived, old)
    r.hset(Q.task("old0"), "state", "archived")
    r.hset(Q.task("old1"), "state", "archived")
    seed(r, active(A))
    store.archive(A, "x")
    assert r.zcard(Q.archived) == 9_999
    assert r.zscore(Q.archived, "a") == NOW
    assert r.zscore(Q.archived, "old1") is None and r.zscore(Q.archived, "old2") == NOW - 10_000 + 2
    assert not r.exists(Q.task("old0"), Q.task("old1"))


def test_server_state_written_rewritten_and_cleared(store: AsynqWorkerStore, r: redis.Redis) -> None:
    server = WireServer(
        host="h",
        pid=7,
        server_id="s1",
        concurrency=2,
        queues={"default": 1},
        status="active",
        start_time=Timestamp(int(NOW)),
    )
    running = [WireWorker(host="h", pid=7, server_id="s1", task_id=t, task_type="email", queue="default") for t in "ab"]
    store.write_server_state(server, running, ttl=10)
    skey, wkey = server_info_key("h", 7, "s1"), workers_key("h", 7, "s1")
    assert r.get(skey) == server.encode() and 9_000 < r.pttl(skey) <= 10_000
    assert r.hgetall(wkey) == {b"a": running[0].encode(), b"b": running[1].encode()}
    assert 9_000 < r.pttl(wkey) <= 10_000
    assert r.zrange(ALL_SERVERS, 0, -1, withscores=True) == [(skey.encode(), NOW + 10)]
    assert r.zrange(ALL_WORKERS, 0, -1, withscores=True) == [(wkey.encode(), NOW + 10)]
    store.write_server_state(server, running[1:], ttl=10)
    assert r.hkeys(wkey) == [b"b"]
    store.write_server_state(server, [], ttl=10)
    assert not r.exists(wkey) and r.exists(skey)
    store.clear_server_state("h", 7, "s1")
    assert dump(r) == {}


def test_cancellations_receive_what_is_published_on_asynq_cancel(store: AsynqWorkerStore, r: redis.Redis) -> None:
    subscription = store.cancellations()
    try:
        r.publish("asynq:cancel", "a")
        got = None
        for _ in range(100):  # the subscribe confirmation first, then the message
            got = subscription.get_message(timeout=0.1)
            if got and got["type"] == "message":
                break
        assert got is not None and got["data"] == b"a" and got["channel"] == b"asynq:cancel"
    finally:
        subscription.close()
