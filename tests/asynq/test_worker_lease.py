"""The asynq worker in this process, on a fake clock: a handler that outlives its lease (the heartbeat could not
extend it in time) is stopped and writes nothing, leaving the task to the recoverer, as asynq's processor does;
the recoverer then retries it with Go's error; an attempt past its deadline is ended at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis

from taskq.queues.engine import FakeClock, Registry, Task, handler
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask
from taskq.worker.asynq.runtime import AsynqRuntime
from taskq.worker.config import WorkerConfig

from .go_asynq import wait_until
from .test_worker_runtime import spec


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a handler thread waiting


@pytest.fixture
def runtime(redis_url: str, registry: Registry, clock: FakeClock, r: redis.Redis) -> Iterator[AsynqRuntime]:
    config = WorkerConfig(
        redis_url=redis_url,
        concurrency=2,
        lease_seconds=30.0,
        heartbeat_interval=0.05,
        recoverer_interval=0.05,
        clock_skew=30.0,
        forwarder_interval=0.05,
        janitor_interval=0.05,
        shutdown_timeout=0.2,
        idle_wait=0.05,
    )
    built = AsynqRuntime(config, registry=registry, clock=clock)
    built.start()
    yield built
    built.stop()


@pytest.fixture
def held(registry: Registry, gate: threading.Event) -> list[Task]:
    """The tasks the handler of type "hold" started; each holds its thread until ``gate`` is set."""
    seen: list[Task] = []

    @handler("hold", registry=registry, retry_delay=lambda n, e, t: 100.0)
    def hold(task: Task) -> None:
        seen.append(task)
        gate.wait(30)

    return seen


def message(r: redis.Redis, task_id: str) -> WireTask:
    return WireTask.decode(r.hget(AsynqQueueKeys("default").task(task_id), "msg"))


def test_a_lease_that_ran_out_stops_the_handler_and_nothing_is_written(go, runtime, held, clock, gate, r) -> None:
    seen = held
    go.enqueue(spec("hold", "h1", max_retry=5))
    wait_until(lambda: seen, 30)
    keys = AsynqQueueKeys("default")
    leased = r.zscore(keys.lease, "h1")
    assert leased == clock.now() + 30  # asynq's lease, on the worker's clock
    clock.advance(31)  # the heartbeat finds the lease gone before it could extend it
    wait_until(lambda: seen[0].cancelled, 30)
    gate.set()
    wait_until(lambda: not runtime.runner.snapshot(), 30)
    assert r.hget(keys.task("h1"), "state") == b"active" and r.zscore(keys.lease, "h1") == leased  # nothing written
    assert message(r, "h1").retried == 0
    clock.advance(30)  # past the recoverer's allowance: the recoverer (this worker's) retries it as Go's would
    wait_until(lambda: r.hget(keys.task("h1"), "state") == b"retry", 30)
    recovered = message(r, "h1")
    assert (recovered.retried, recovered.error_msg) == (1, "asynq: task lease expired")
    assert r.zscore(keys.retry, "h1") == clock.now() + 100  # the handler's own retry delay


def test_a_handler_past_its_deadline_is_ended_with_go_error(go, runtime, held, clock, r) -> None:
    seen = held
    go.enqueue(spec("hold", "d1", max_retry=5, timeout_seconds=10))
    wait_until(lambda: seen, 30)
    clock.advance(11)
    keys = AsynqQueueKeys("default")
    wait_until(lambda: r.hget(keys.task("d1"), "state") == b"retry", 30)
    assert seen[0].cancelled
    ended = message(r, "d1")
    assert (ended.retried, ended.error_msg) == (1, "context deadline exceeded")
