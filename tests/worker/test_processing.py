"""The worker end to end, in-process, against the real Redis: handlers succeed, fail, retry, time out, get
cancelled, are routed, paused and shut down. Time is a FakeClock shared by server, client and inspector, so
retries, timeouts and retention are reached by advancing it, never by sleeping."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime

import pytest
import redis
from worker_support import POOLS, listening_for_cancels, state_of, wait_for

from taskq.queues.engine import (
    DuplicateTaskError,
    FakeClock,
    Inspector,
    Keys,
    LeaseLostError,
    RetryWithoutFailure,
    SkipRetry,
    Task,
    handler,
)
from taskq.queues.engine.clock import to_ms


@pytest.fixture(params=POOLS)
def worker_pool(request: pytest.FixtureRequest) -> str:
    """Every test of this module runs on the thread pool and on the asyncio pool (tests/worker/conftest.py)."""
    return str(request.param)


Q = "default"


def at(seconds: float) -> datetime:
    """The datetime the engine reports for an epoch-seconds instant (millisecond precision)."""
    return datetime.fromtimestamp(to_ms(seconds) / 1000, tz=UTC)


def never(*_args: object) -> float:
    """A retry delay far beyond any test, so a task that failed stays in retry."""
    return 10_000.0


def sleeper(registry, task_type: str) -> tuple[threading.Event, threading.Event]:
    """Register an async handler that sleeps a minute unless cancelled; returns (started, cancelled) events."""
    started, cancelled = threading.Event(), threading.Event()

    @handler(task_type, registry=registry, retry_delay=never)
    async def sleep(task: Task) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    return started, cancelled


def idle(server) -> bool:
    """Nothing running, nothing waiting to be acknowledged."""
    return not server.processor.inflight and server.processor.capacity.busy == 0 and server.acker.drain(0)


# -- success ------------------------------------------------------------------------------------------------------


def test_sync_and_async_handlers_succeed_and_write_results(make_server, registry, client, inspector):
    threads = {}

    @handler("math:add", registry=registry)
    def add(task: Task) -> None:
        threads["sync"] = threading.current_thread().name
        task.progress(1, 1)
        task.write_result({"sum": sum(task.json())})

    @handler("math:mul", registry=registry)
    async def mul(task: Task) -> None:
        threads["async"] = threading.current_thread().name
        await asyncio.sleep(0.01)
        a, b = task.json()
        task.write_result({"product": a * b})

    make_server()
    added = client.enqueue("math:add", [1, 2, 3], retention=60)
    multiplied = client.enqueue("math:mul", [6, 7], retention=60)
    plain = client.enqueue("math:add", [1])  # no retention: deleted on success

    wait_for(lambda: state_of(inspector, Q, added.id) == "completed", what="sync task completed")
    wait_for(lambda: state_of(inspector, Q, multiplied.id) == "completed", what="async task completed")
    wait_for(lambda: state_of(inspector, Q, plain.id) is None, what="task without retention deleted")

    done = inspector.get_task(Q, added.id)
    assert done.result_json() == {"sum": 6}
    assert done.progress == (1, 1)
    assert done.retried == 0 and done.last_error is None
    # The worker reports its handler's start with the ack, so the hash keeps how long it ran (by the worker's
    # clock, a FakeClock here: whatever the figure, it is there).
    assert done.last_run_seconds is not None and done.last_run_seconds >= 0
    assert inspector.get_task(Q, multiplied.id).result_json() == {"product": 42}
    assert threads["sync"].startswith("handler-") and threads["async"] == "async-handlers"
    info = wait_for(lambda: (i := inspector.queue_info(Q)).processed_total == 3 and i, what="3 processed")
    assert (info.failed_total, info.pending, info.active, info.retry, info.completed) == (0, 0, 0, 0, 2)


def test_result_is_kept_for_its_retention_then_the_janitor_deletes_it(
    make_server, registry, client, inspector, clock: FakeClock
):
    @handler("report:build", registry=registry)
    def build(task: Task) -> None:
        task.write_result(b"the report")

    make_server()
    info = client.enqueue("report:build", retention=60)
    wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="completed")
    done = inspector.get_task(Q, info.id)
    assert done.result == b"the report"
    assert done.expires_at == at(clock.now() + 60)

    clock.advance(59)
    time.sleep(0.5)  # a couple of janitor rounds (interval 0.2 s): still inside its retention
    assert state_of(inspector, Q, info.id) == "completed"

    clock.advance(1.5)
    wait_for(lambda: state_of(inspector, Q, info.id) is None, what="janitor deleted the completed task")
    assert inspector.queue_info(Q).completed == 0


# -- failures -----------------------------------------------------------------------------------------------------


def in_retry(client, inspector, task_type: str):
    """Enqueue ``task_type`` (kept a minute once completed) and wait until its first run left it in retry."""
    info = client.enqueue(task_type, retention=60)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what=f"{task_type} in retry after its first run")
    return inspector.get_task(Q, info.id)


def test_failure_goes_to_retry_with_the_handlers_backoff_then_the_forwarder_brings_it_back(
    make_server, registry, client, inspector, clock: FakeClock
):
    seen = []

    @handler("flaky", registry=registry, retry_delay=lambda n, exc, task: 10.0 * (n + 1))
    def flaky(task: Task) -> None:
        seen.append(task.retried)
        if task.retried < 2:
            raise RuntimeError(f"upstream down (attempt {task.retried + 1})")
        task.write_result(b"ok")

    make_server()
    start = clock.now()
    task = in_retry(client, inspector, "flaky")
    assert task.retried == 1
    assert task.last_error == "RuntimeError: upstream down (attempt 1)"
    assert task.next_process_at == at(start + 10)  # retry_delay(0, ...) = 10 s after the failure
    assert task.last_failed_at == at(start)

    clock.advance(9.9)
    time.sleep(0.4)  # several forwarder rounds: not due yet
    assert state_of(inspector, Q, task.id) == "retry" and seen == [0]

    clock.advance(0.1)
    wait_for(
        lambda: inspector.get_task(Q, task.id).retried == 2 and state_of(inspector, Q, task.id) == "retry",
        what="second failure in retry",
    )
    assert inspector.get_task(Q, task.id).next_process_at == at(clock.now() + 20)  # retry_delay(1, ...) = 20 s

    clock.advance(20)
    wait_for(lambda: state_of(inspector, Q, task.id) == "completed", what="third attempt succeeded")
    assert seen == [0, 1, 2]
    stats = inspector.queue_info(Q)
    assert (stats.processed_total, stats.failed_total) == (3, 2)


@pytest.mark.parametrize(
    ("error", "max_retry", "runs"),
    [
        (ValueError("bad input"), 2, [0, 1, 2]),  # the first run and max_retry retries
        (SkipRetry("negative amount"), 10, [0]),  # at once, whatever max_retry allows
    ],
    ids=["retries spent", "SkipRetry"],
)
def test_archived_once_retries_are_spent_or_skipped(make_server, registry, client, inspector, error, max_retry, runs):
    calls = []

    @handler("doomed", registry=registry, retry_delay=lambda *_: 0.0)
    def doomed(task: Task) -> None:
        calls.append(task.retried)
        raise error

    make_server()
    info = client.enqueue("doomed", max_retry=max_retry)
    wait_for(lambda: state_of(inspector, Q, info.id) == "archived", what="archived")
    assert calls == runs
    dead = inspector.get_task(Q, info.id)
    assert dead.last_error == f"{type(error).__name__}: {error}"
    assert dead.last_run_seconds is not None  # the last attempt's run time, reported by the worker
    stats = wait_for(lambda: (s := inspector.queue_info(Q)).failed_total == len(runs) and s)
    assert (stats.archived, stats.retry, stats.pending, stats.active) == (1, 0, 0, 0)


def test_retry_without_failure_counts_no_failure(make_server, registry, client, inspector, clock: FakeClock):
    calls = []

    @handler("warmup", registry=registry, retry_delay=never)
    def warmup(task: Task) -> None:
        calls.append(task.retried)
        if len(calls) == 1:
            exc = RetryWithoutFailure("cache warming up")
            exc.delay = 5  # type: ignore[attr-defined]
            raise exc

    make_server()
    start = clock.now()
    task = in_retry(client, inspector, "warmup")
    assert task.retried == 0
    assert task.last_error == "RetryWithoutFailure: cache warming up"
    assert task.next_process_at == at(start + 5)  # the exception's own delay wins over retry_delay
    stats = inspector.queue_info(Q)
    assert (stats.processed_total, stats.failed_total, stats.failed_today) == (0, 0, 0)

    clock.advance(5)
    wait_for(lambda: state_of(inspector, Q, task.id) == "completed", what="completed")
    assert calls == [0, 0]
    stats = inspector.queue_info(Q)
    assert (stats.processed_total, stats.failed_total) == (1, 0)


# -- timeouts, deadlines, cancellation ---------------------------------------------------------------------------


def test_async_handler_past_its_timeout_is_cancelled_and_retried(
    make_server, registry, client, inspector, clock: FakeClock
):
    started, cancelled = sleeper(registry, "slow:async")

    server = make_server()
    info = client.enqueue("slow:async", timeout=5, retention=60)
    assert started.wait(10)
    clock.advance(4.9)
    time.sleep(0.3)  # several watchdog rounds (0.05 s): not yet
    assert not cancelled.is_set() and state_of(inspector, Q, info.id) == "active"

    clock.advance(0.1)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="timed-out task in retry")
    assert cancelled.wait(10)
    task = inspector.get_task(Q, info.id)
    assert task.last_error == "TaskCancelledError: timed out after 5 s"
    assert task.retried == 1
    wait_for(lambda: idle(server), what="the slot freed")


def test_sync_handler_past_its_timeout_sees_cancelled_and_its_late_result_is_discarded(
    make_server, registry, client, inspector, clock: FakeClock
):
    started, returned = threading.Event(), threading.Event()

    @handler("slow:sync", registry=registry, retry_delay=never)
    def slow(task: Task) -> None:
        started.set()
        deadline = time.monotonic() + 10
        while not task.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        returned.set()  # returns normally: a "success" that arrives after the timeout ended the attempt

    server = make_server()
    info = client.enqueue("slow:sync", timeout=5, retention=60)
    assert started.wait(10)
    clock.advance(5)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="timed-out task in retry")
    assert returned.wait(10)
    wait_for(lambda: idle(server), what="the handler returned and nothing is left to acknowledge")

    task = inspector.get_task(Q, info.id)
    assert task.state == "retry"
    assert task.last_error == "TaskCancelledError: timed out after 5 s"
    assert task.result is None
    stats = inspector.queue_info(Q)
    assert (stats.completed, stats.processed_total, stats.failed_total) == (0, 1, 1)
    assert server.acker.refused == 0  # the late result was never even sent


def test_deadline_cancels_the_attempt(make_server, registry, client, inspector, clock: FakeClock):
    started, cancelled = sleeper(registry, "deadline")

    make_server()
    info = client.enqueue("deadline", deadline=clock.now() + 3, timeout=600)
    assert started.wait(10)
    clock.advance(3)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="task past its deadline in retry")
    assert cancelled.wait(10)
    assert inspector.get_task(Q, info.id).last_error == "TaskCancelledError: deadline exceeded"


def test_operator_cancel_stops_the_running_task(make_server, registry, client, inspector: Inspector, r: redis.Redis):
    started, cancelled = sleeper(registry, "long")

    make_server()
    info = client.enqueue("long")
    assert started.wait(10)
    listening_for_cancels(r)
    assert inspector.cancel_task(Q, info.id) == 1
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="cancelled task in retry")
    assert cancelled.wait(10)
    task = inspector.get_task(Q, info.id)
    assert task.last_error == "TaskCancelledError: cancelled by an operator"


def test_write_result_from_a_zombie_attempt_is_refused(make_server, registry, client, inspector, clock: FakeClock):
    started, may_write = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    @handler("zombie", registry=registry, retry_delay=never)
    def zombie(task: Task) -> None:
        started.set()
        may_write.wait(10)
        try:
            task.write_result(b"too late")
        except BaseException as exc:  # recorded for the test
            outcome.append(exc)
            raise

    make_server()
    info = client.enqueue("zombie", timeout=5, retention=60)
    assert started.wait(10)
    clock.advance(5)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="timed-out task in retry")
    may_write.set()
    wait_for(lambda: outcome, what="the zombie's write")
    assert isinstance(outcome[0], LeaseLostError)
    task = inspector.get_task(Q, info.id)
    assert task.result is None and task.state == "retry"


# -- uniqueness, pause, routing, middleware -------------------------------------------------------------------


def test_unique_task_refuses_a_duplicate_until_the_first_succeeds(make_server, registry, client, inspector):
    runs = []

    @handler("sync:account", registry=registry)
    def sync_account(task: Task) -> None:
        runs.append(task.id)

    first = client.enqueue("sync:account", {"account": 7}, unique=600)
    with pytest.raises(DuplicateTaskError):
        client.enqueue("sync:account", {"account": 7}, unique=600)
    client.enqueue("sync:account", {"account": 8}, unique=600)  # another payload is another task

    make_server()
    wait_for(lambda: len(runs) == 2 and inspector.queue_info(Q).processed_total == 2, what="both ran")
    assert first.id in runs
    again = client.enqueue("sync:account", {"account": 7}, unique=600)  # the lock went with the success
    wait_for(lambda: again.id in runs, what="the re-enqueued task ran")


def test_a_paused_queue_hands_out_nothing_until_unpaused(make_server, registry, client, inspector):
    runs = []

    @handler("ping", registry=registry)
    def ping(task: Task) -> None:
        runs.append(task.id)

    make_server()
    inspector.pause_queue(Q)
    info = client.enqueue("ping")
    time.sleep(0.6)  # the worker is idle and awake (the enqueue publishes a wake-up): it must fetch nothing
    assert runs == []
    assert state_of(inspector, Q, info.id) == "pending"

    inspector.unpause_queue(Q)
    wait_for(lambda: runs == [info.id], what="the task ran after unpause")


def queue_order(make_server, registry, client, enqueued: dict[str, int], count: int, **config) -> list[str]:
    """The queues of the first ``count`` tasks a one-slot server runs, in order (``enqueued``: queue -> how many,
    enqueued in that order before the server starts)."""
    order: list[str] = []

    @handler("record", registry=registry)
    def record(task: Task) -> None:
        order.append(task.queue)

    for queue, n in enqueued.items():
        client.enqueue_many([("record", b"")] * n, queue=queue)
    make_server(concurrency=1, **config)
    wait_for(lambda: len(order) >= count, what=f"{count} tasks processed")
    return order[:count]


def test_weighted_order_favours_the_heavy_queue(make_server, registry, client):
    weights = {"heavy": 9, "light": 1}
    # The order is drawn once per fetch, and a fetch with prefetch takes a batch from one queue, so six lights in a
    # row are one draw in ten, not one in a million. Without prefetch every task is its own draw.
    first = queue_order(make_server, registry, client, {"heavy": 100, "light": 100}, 40, queues=weights, prefetch=0)
    # Heavy comes first 9 times in 10: ~36 expected; fewer than 28 has a probability around 1e-5.
    assert first.count("heavy") >= 28, first


def test_strict_order_runs_all_of_the_high_queue_first(make_server, registry, client):
    order = queue_order(
        make_server, registry, client, {"low": 20, "high": 20}, 40, queues={"low": 1, "high": 5}, strict=True
    )
    assert order == ["high"] * 20 + ["low"] * 20


def test_routing_takes_the_longest_prefix(make_server, registry, client, inspector):
    routed = []

    @handler("email", registry=registry)
    def any_email(task: Task) -> None:
        routed.append(("email", task.type))

    @handler("email:deliver", registry=registry)
    def deliver(task: Task) -> None:
        routed.append(("email:deliver", task.type))

    make_server(concurrency=1)
    for task_type in ("email:deliver", "email:deliver:bulk", "email:bounce", "email"):
        client.enqueue(task_type)
    wait_for(lambda: len(routed) == 4, what="4 routed")
    assert sorted(routed) == sorted(
        [
            ("email:deliver", "email:deliver"),
            ("email:deliver", "email:deliver:bulk"),
            ("email", "email:bounce"),
            ("email", "email"),
        ]
    )


def test_unknown_type_goes_to_retry_with_a_clear_error(make_server, registry, client, inspector):
    @handler("known", registry=registry)
    def known(task: Task) -> None:
        pass

    make_server()
    info = client.enqueue("unknown:type")
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="in retry")
    task = inspector.get_task(Q, info.id)
    assert task.last_error.startswith('LookupError: no handler for task type "unknown:type": no worker registered')
    assert "--import" in task.last_error and "spelling" in task.last_error  # what to do about it
    assert task.retried == 1


def test_middleware_wraps_every_handler(make_server, registry, client, inspector):
    log: list[tuple[str, str]] = []

    @registry.use
    def outer(task: Task):
        log.append(("outer:before", task.type))
        try:
            yield
        except Exception as exc:
            log.append(("outer:error", type(exc).__name__))
            raise
        log.append(("outer:after", task.type))

    @registry.use
    def inner(task: Task):
        log.append(("inner:before", task.type))
        yield
        log.append(("inner:after", task.type))

    @handler("mw:ok", registry=registry)
    def ok(task: Task) -> None:
        log.append(("handler", task.type))

    @handler("mw:fail", registry=registry, max_retry=0)
    async def fail(task: Task) -> None:
        log.append(("handler", task.type))
        raise KeyError("missing")

    make_server(concurrency=1)
    client.enqueue("mw:ok")
    wait_for(lambda: ("outer:after", "mw:ok") in log, what="ok wrapped")
    assert log == [
        ("outer:before", "mw:ok"),
        ("inner:before", "mw:ok"),
        ("handler", "mw:ok"),
        ("inner:after", "mw:ok"),
        ("outer:after", "mw:ok"),
    ]
    log.clear()
    failed = client.enqueue("mw:fail", max_retry=0)
    wait_for(lambda: state_of(inspector, Q, failed.id) == "archived", what="failure archived")
    assert log == [
        ("outer:before", "mw:fail"),
        ("inner:before", "mw:fail"),
        ("handler", "mw:fail"),
        ("outer:error", "KeyError"),
    ]  # inner's after-code is skipped by the exception


# -- bad records, shutdown ------------------------------------------------------------------------------------


def test_an_undecodable_message_is_archived_with_the_reason(
    make_server, registry, client, inspector, r: redis.Redis, clock: FakeClock
):
    runs = []

    @handler("corrupt", registry=registry)
    def never_called(task: Task) -> None:
        runs.append(task.id)

    q = Keys().queue(Q)
    now_ms = to_ms(clock.now())
    r.hset(
        q.task("bad-1"),
        mapping={"type": "corrupt", "msg": b"{not json", "payload": b"", "state": "pending", "since": now_ms},
    )
    r.hincrby(q.type_counts, "pending:corrupt", 1)
    r.lpush(q.pending, "bad-1")
    good = client.enqueue("corrupt")  # a readable task of the same type still runs

    make_server()
    wait_for(lambda: r.hget(q.task("bad-1"), "state") == b"archived", what="bad record archived")
    error = r.hget(q.task("bad-1"), "error").decode()
    assert error.startswith("undecodable task message:"), error
    assert r.zscore(q.archived, "bad-1") is not None
    wait_for(lambda: runs == [good.id], what="the good task ran")
    # Nothing left behind: the good task is acknowledged after its handler returns, so its lease may outlive the
    # archiving of the bad record by a moment.
    wait_for(lambda: r.zcard(q.lease) == 0, what="the good task's lease released")
    assert r.llen(q.pending) == 0
    # The operator can still see it in the archive and delete it.
    shown = inspector.get_task(Q, "bad-1")
    assert (shown.state, shown.type, shown.last_error) == ("archived", "corrupt", error)
    assert [t.id for t in inspector.list_tasks(Q, "archived")] == ["bad-1"]
    inspector.delete_task(Q, "bad-1")
    assert not r.exists(q.task("bad-1"))


def test_graceful_shutdown_requeues_unfinished_tasks(make_server, registry, client, inspector):
    started, release = threading.Event(), threading.Event()
    saw_cancel = []

    @handler("blocking", registry=registry)
    def blocking(task: Task) -> None:
        started.set()
        release.wait(10)
        saw_cancel.append(task.cancelled)

    finished = []

    @handler("quick", registry=registry)
    def quick(task: Task) -> None:
        finished.append(task.id)

    server = make_server(shutdown_timeout=0.3, concurrency=2)
    info = client.enqueue("blocking", max_retry=3)
    assert started.wait(10)
    quick_one = client.enqueue("quick")
    wait_for(lambda: finished == [quick_one.id], what="the quick task ran")
    try:
        server.stop()
        task = inspector.get_task(Q, info.id)
        assert task.state == "pending"
        assert task.retried == 0 and task.last_error is None
        assert inspector.queue_info(Q).active == 0
    finally:
        release.set()
    wait_for(lambda: saw_cancel, what="the handler returned")
    assert saw_cancel == [True]  # the handler was told to stop
    time.sleep(0.2)
    assert state_of(inspector, Q, info.id) == "pending"  # its late return changed nothing
    assert server.processor.inflight == {}
