"""Lease recovery with a FakeClock: a task whose worker stopped heartbeating is taken back by another server's
recoverer once the clock passes lease + skew, and the late acknowledgement of the old attempt is refused."""

from __future__ import annotations

import threading
import time

import pytest
from worker_support import POOLS, state_of, wait_for

from taskq.queues.engine import FakeClock, LeaseLostError, Task, TaskMessage, handler
from taskq.queues.engine.broker import Broker
from taskq.worker.acker import Acker
from taskq.worker.attempt import Attempt, Outcome
from taskq.worker.heartbeat import Heartbeat
from taskq.worker.recoverer import LEASE_EXPIRED


@pytest.fixture(params=POOLS)
def worker_pool(request: pytest.FixtureRequest) -> str:
    """Every test of this module runs on the thread pool and on the asyncio pool (tests/worker/conftest.py)."""
    return str(request.param)


Q = "default"


def test_a_silent_workers_task_is_recovered_by_another_server_and_its_late_ack_refused(
    make_server, registry, client, inspector, clock: FakeClock
):
    first_started, release_first = threading.Event(), threading.Event()
    late_write: list[BaseException] = []

    @handler("lease:job", registry=registry, retry_delay=lambda *_: 0.0)
    def job(task: Task) -> None:
        if task.retried == 0:  # the first attempt hangs until the test lets it go, then answers too late
            first_started.set()
            release_first.wait(10)
            try:
                task.write_result(b"from the zombie")
            except LeaseLostError as exc:
                late_write.append(exc)
            return
        task.write_result(b"from the rescuer")

    zombie = make_server(concurrency=1)
    info = client.enqueue("lease:job", retention=60)
    assert first_started.wait(10)
    # The zombie goes silent: no more heartbeats, no watchdog to notice the lapsed lease (a paused process), and
    # its own recoverer is not the one we want to see act.
    zombie.heartbeat.stop()
    zombie.watchdog.stop()
    zombie.recoverer.stop()
    rescuer = make_server(concurrency=1)
    try:
        clock.advance(2.0)  # exactly the lease: expired, but within the skew allowance
        time.sleep(0.7)  # two recoverer rounds: the lease is left alone
        assert state_of(inspector, Q, info.id) == "active"
        assert rescuer.recoverer.recovered == 0

        clock.advance(0.5)  # past lease + skew (0.2 s)
        wait_for(lambda: rescuer.recoverer.recovered == 1, what="the rescuer's recoverer took the task back")
        wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="the rescuer ran it again")
        task = inspector.get_task(Q, info.id)
        assert task.result == b"from the rescuer"
        assert task.retried == 1
    finally:
        release_first.set()

    wait_for(lambda: zombie.acker.refused == 1, what="the zombie's late success refused")
    assert late_write and isinstance(late_write[0], LeaseLostError)
    task = inspector.get_task(Q, info.id)
    assert (task.state, task.result) == ("completed", b"from the rescuer")
    stats = inspector.queue_info(Q)
    assert (stats.processed_total, stats.failed_total, stats.active) == (2, 1, 0)


def test_a_task_dequeued_and_never_acked_is_archived_when_out_of_retries(
    make_server, registry, client, inspector, redis_url, clock: FakeClock
):
    @handler("lost", registry=registry)
    def lost(task: Task) -> None:
        raise AssertionError("never runs: the zombie holds it")

    info = client.enqueue("lost", max_retry=0)
    zombie = Broker(redis_url, clock=clock)
    try:
        leased = zombie.run(zombie.transitions.dequeue(Q, 10, 2.0, "zombie", "z:"))
        assert [item.id for item in leased] == [info.id]

        rescuer = make_server()
        clock.advance(2.3)
        wait_for(lambda: state_of(inspector, Q, info.id) == "archived", what="recovered to the archive")
        assert inspector.get_task(Q, info.id).last_error == LEASE_EXPIRED
        assert rescuer.recoverer.recovered == 1

        # The zombie wakes up and acknowledges success: the fence refuses it and nothing changes.
        item = leased[0]
        message = TaskMessage.decode(item.id, Q, item.type, item.payload, item.options)
        attempt = Attempt(item, Q, Task(message, item.retried), None, None, clock.now())
        written = []
        acker = Acker(zombie, "zombie", on_written=written.append)
        assert acker.write([(attempt, Outcome("success"))]) == []
        assert acker.refused == 1 and written == [attempt]
        assert acker.write([(attempt, Outcome("retry", "late failure", retry_at=clock.now()))]) == []
        assert acker.refused == 2
        assert state_of(inspector, Q, info.id) == "archived"
        assert inspector.get_task(Q, info.id).last_error == LEASE_EXPIRED
    finally:
        zombie.close()


def test_heartbeats_keep_a_long_task_leased(make_server, registry, client, inspector, clock: FakeClock):
    """The live worker's heartbeat pushes the lease forward as the clock moves, so no recoverer takes it."""
    started, release = threading.Event(), threading.Event()

    @handler("long", registry=registry)
    def long(task: Task) -> None:
        started.set()
        release.wait(10)

    server = make_server()
    make_server()  # a second server whose recoverer watches too
    info = client.enqueue("long", retention=60)
    assert started.wait(10)
    try:
        key = server.broker.keys.queue(Q).lease
        for _ in range(6):  # 6 x 1 s of engine time: three leases' worth
            before = server.broker.conn.zscore(key, info.id)
            clock.advance(1.0)
            # Wait for a heartbeat to extend the lease past the new "now" before moving on.
            wait_for(
                lambda before=before: server.broker.conn.zscore(key, info.id) > before,
                what="a heartbeat extended the lease",
            )
        assert state_of(inspector, Q, info.id) == "active"
    finally:
        release.set()
    wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="completed")
    assert inspector.get_task(Q, info.id).retried == 0


def test_a_zombie_attempts_late_ack_does_not_untrack_the_live_attempt_of_the_same_task(
    make_server, registry, client, inspector, clock: FakeClock
):
    """The same server runs a task again after its first attempt's lease lapsed (the first attempt is a sync
    handler that ignores cancellation). When the zombie finally returns, its refused ack must not make the
    server forget the live attempt: the heartbeat must keep extending the live attempt's lease."""
    release_zombie, release_live = threading.Event(), threading.Event()
    live_started = threading.Event()
    runs: list[int] = []

    @handler("twice", registry=registry, retry_delay=lambda *_: 0.0)
    def twice(task: Task) -> None:
        runs.append(task.retried)
        if task.retried == 0:
            release_zombie.wait(10)
        else:
            live_started.set()
            release_live.wait(10)

    server = make_server(concurrency=2)
    info = client.enqueue("twice", retention=60)
    wait_for(lambda: runs == [0], what="first attempt running")
    server.heartbeat.stop()  # the server loses its lease (as in a long pause) without noticing
    server.watchdog.stop()
    try:
        clock.advance(2.5)
        assert live_started.wait(10)  # its own recoverer took the task back and it fetched it again
        zombie_done = server.acker.refused + 1
        release_zombie.set()  # the zombie returns "success": refused by the fence
        wait_for(lambda: server.acker.refused == zombie_done, what="the zombie's ack refused")
        wait_for(lambda: server.acker.drain(0))

        live = server.processor.inflight.get((Q, info.id))
        assert live is not None and live.task.retried == 1, "the live attempt is no longer tracked"
        heartbeat = Heartbeat(server.broker, server.store, server.config, server.processor)
        heartbeat.start()
        try:
            key = server.broker.keys.queue(Q).lease
            for _ in range(4):
                before = server.broker.conn.zscore(key, info.id)
                clock.advance(1.0)
                wait_for(lambda before=before: server.broker.conn.zscore(key, info.id) > before, what="lease extended")
        finally:
            heartbeat.stop()
    finally:
        release_zombie.set()
        release_live.set()
    wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="completed")
    assert runs == [0, 1]


def test_recoverer_drops_lease_entries_whose_task_is_gone(make_server, r, clock):
    """A hand-deleted hash must not wedge recovery: its lease entry is removed, real ones are still recovered."""
    from taskq.queues.engine.keys import Keys

    q = Keys().queue("default")
    r.zadd(q.lease, {f"gone{n}": 1 for n in range(150)})  # more than one batch, long expired
    server = make_server()
    wait_for(lambda: r.zcard(q.lease) == 0, what="orphaned lease entries dropped")
    assert server.recoverer.recovered == 0


def cancellable(registry, task_type: str) -> tuple[threading.Event, threading.Event]:
    """Register a sync handler that runs until its attempt is cancelled; returns (started, stopped) events."""
    started, stopped = threading.Event(), threading.Event()

    @handler(task_type, registry=registry)
    def run(task: Task) -> None:
        started.set()
        deadline = time.monotonic() + 10
        while not task.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        if task.cancelled:
            stopped.set()

    return started, stopped


def test_an_attempt_whose_lease_the_heartbeat_cannot_extend_is_stopped_when_the_lease_runs_out(
    make_server, registry, client, inspector, clock: FakeClock
):
    """A worker cut off from Redis must not run on a task another worker may already have (the chaos suite
    cuts a real connection; here the heartbeat is simply stopped)."""
    started, stopped = cancellable(registry, "cut:off")
    server = make_server()
    server.recoverer.stop()  # only the worker's own reaction is under test, not the recovery
    info = client.enqueue("cut:off", retention=60)
    assert started.wait(10)
    server.heartbeat.stop()
    time.sleep(0.5)  # the heartbeat (every 0.2 s) has missed two rounds
    clock.advance(1.9)
    time.sleep(0.3)  # several watchdog rounds (0.05 s): the lease has not run out yet
    assert not stopped.is_set() and server.processor.leases_expired == 0

    clock.advance(0.1)
    assert stopped.wait(10)
    wait_for(lambda: not server.processor.inflight and server.acker.drain(0), what="the attempt ended")
    assert server.processor.leases_expired == 1
    task = inspector.get_task(Q, info.id)
    # Nothing was written: the task waits for a recoverer, and no acknowledgement was even tried.
    assert (task.state, task.retried, server.acker.refused) == ("active", 0, 0)


def test_a_clock_jump_past_the_lease_does_not_stop_an_attempt_the_heartbeat_still_extends(
    make_server, registry, client, inspector, clock: FakeClock
):
    started, stopped = cancellable(registry, "jumped")
    server = make_server()
    info = client.enqueue("jumped", retention=60)
    assert started.wait(10)
    key = server.broker.keys.queue(Q).lease
    before = server.broker.conn.zscore(key, info.id)
    clock.advance(2.1)  # past the lease, within the skew allowance: no recoverer acts
    wait_for(lambda: server.broker.conn.zscore(key, info.id) > before, what="a heartbeat extended the lease")
    time.sleep(0.3)
    assert not stopped.is_set() and server.processor.leases_expired == 0
    assert state_of(inspector, Q, info.id) == "active"
