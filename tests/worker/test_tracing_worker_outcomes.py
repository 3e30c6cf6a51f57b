"""How an attempt's span ends (worker/attempt_tracing.py): archived, cancelled by an operator, its late
acknowledgement refused (``lease_lost``), requeued at shutdown; a failure's message masked as in Redis. Each on the
thread pool and on the asyncio pool."""

from __future__ import annotations

import asyncio
import threading

import pytest
import redis
from opentelemetry.trace import StatusCode
from worker_support import POOLS, listening_for_cancels, state_of, wait_for

from taskq.queues.engine import FakeClock, SkipRetry, Task, handler
from taskq.queues.engine.redaction import MASK, Redaction

Q = "default"
SECRET = "4111-1111-1111-1111"


@pytest.fixture(params=POOLS)
def worker_pool(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def only_attempt(spans, outcome: str):
    """The one attempt span, once it has ended, checking its outcome."""
    (span,) = wait_for(lambda: [s for s in spans.get_finished_spans() if s.name == f"process {Q}"], what="its span")
    assert span.attributes["taskq.outcome"] == outcome
    return span


def never(*_args: object) -> float:
    return 10_000.0


def test_a_failure_out_of_retries_ends_archived_with_its_error_masked(spans, make_server, registry, client, inspector):
    @handler("trace:charge", registry=registry)
    def charge(task: Task) -> None:
        raise SkipRetry(f"card {task.json()['card']} declined")

    make_server(redaction=Redaction.build(keys=["card"]))
    info = client.enqueue("trace:charge", {"card": SECRET})
    span = only_attempt(spans, "archived")
    assert span.attributes["messaging.message.id"] == info.id
    assert span.status.status_code is StatusCode.ERROR and SECRET not in span.status.description
    (event,) = span.events
    assert event.attributes["exception.message"] == f"card {MASK} declined"
    assert SECRET not in event.attributes["exception.stacktrace"] and "SkipRetry" in event.attributes["exception.type"]
    assert state_of(inspector, Q, info.id) == "archived"


def test_an_operators_cancel_ends_the_span_cancelled(spans, make_server, registry, client, inspector, r: redis.Redis):
    started = threading.Event()

    @handler("trace:long", registry=registry, retry_delay=never)
    async def long(task: Task) -> None:
        started.set()
        await asyncio.sleep(60)

    make_server()
    info = client.enqueue("trace:long")
    assert started.wait(10)
    listening_for_cancels(r)
    assert inspector.cancel_task(Q, info.id) == 1
    span = only_attempt(spans, "cancelled")
    assert span.status.status_code is StatusCode.ERROR
    assert span.events[0].attributes["exception.message"] == "cancelled by an operator"
    assert state_of(inspector, Q, info.id) == "retry"


def test_an_attempt_whose_late_ack_is_refused_ends_lease_lost(spans, make_server, registry, client, clock: FakeClock):
    first_started, release_first = threading.Event(), threading.Event()

    @handler("trace:zombie", registry=registry, retry_delay=lambda *_: 0.0)
    def job(task: Task) -> None:
        if task.retried == 0:  # the first attempt hangs until another worker has run the task again
            first_started.set()
            release_first.wait(10)

    zombie = make_server(concurrency=1)
    client.enqueue("trace:zombie")
    assert first_started.wait(10)
    for component in (zombie.heartbeat, zombie.watchdog, zombie.recoverer):  # it goes silent, as a paused process
        component.stop()
    rescuer = make_server(concurrency=1)
    try:
        clock.advance(2.5)  # past lease + skew: the rescuer's recoverer takes the task back and runs it again
        wait_for(lambda: rescuer.recoverer.recovered == 1, what="the task recovered")
        wait_for(lambda: [s for s in spans.get_finished_spans() if s.attributes["taskq.attempt"] == 2], what="rerun")
    finally:
        release_first.set()
    wait_for(lambda: zombie.acker.refused == 1, what="the zombie's late success refused")
    both = wait_for(lambda: len(spans.get_finished_spans()) == 2 and spans.get_finished_spans(), what="both spans")
    by_attempt = {s.attributes["taskq.attempt"]: s for s in both}
    assert by_attempt[2].attributes["taskq.outcome"] == "completed"
    zombie_span = by_attempt[1]
    assert zombie_span.attributes["taskq.outcome"] == "lease_lost"
    assert zombie_span.status.status_code is StatusCode.ERROR and "lease lost" in zombie_span.status.description


def test_a_task_left_running_at_shutdown_ends_requeued(spans, make_server, registry, client, inspector):
    started, release = threading.Event(), threading.Event()

    @handler("trace:slow", registry=registry)
    def slow(task: Task) -> None:
        started.set()
        release.wait(10)

    server = make_server(concurrency=1, shutdown_timeout=0.2)
    info = client.enqueue("trace:slow")
    assert started.wait(10)
    try:
        server.stop()  # the handler outlives the shutdown timeout: its task goes back to pending
    finally:
        release.set()
    span = only_attempt(spans, "requeued")
    assert span.status.status_code is StatusCode.UNSET and not span.events
    assert state_of(inspector, Q, info.id) == "pending"


def test_an_attempt_stopped_when_its_lease_ran_out_unextended_ends_lease_lost(
    spans, make_server, registry, client, clock: FakeClock
):
    started = threading.Event()

    @handler("trace:cut", registry=registry)
    async def cut(task: Task) -> None:
        started.set()
        await asyncio.sleep(60)

    server = make_server()
    server.recoverer.stop()  # only the worker's own reaction is under test
    client.enqueue("trace:cut")
    assert started.wait(10)
    server.heartbeat.stop()  # as if cut off from Redis: the lease is no longer extended
    clock.advance(2.5)  # past the lease: the watchdog stops the attempt and writes nothing
    span = only_attempt(spans, "lease_lost")
    assert span.status.status_code is StatusCode.ERROR and not span.events
    assert server.processor.leases_expired == 1
