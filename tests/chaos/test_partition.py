"""A worker cut off from Redis by a chaos proxy (blackhole or reset), while a second worker keeps a direct
connection: the cut-off worker stops the attempts whose lease it can no longer extend, the other worker runs them
after the lease expires, and once the network heals the cut-off worker's stale acknowledgements are refused by
the fence and counted (or, when its connections were reset, abandoned unsent). Latency below the lease changes
nothing. Both workers are servers of this process, each with its own registry, so a test reads their counters."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis
from chaos_support import ChaosProxy, record_figures, scale, state_of, wait_for

from taskq.queues.engine import Client, Inspector, Registry, Task, handler
from tests.worker.worker_support import FAST
from taskq.worker.config import WorkerConfig
from taskq.worker.recoverer import LEASE_EXPIRED
from taskq.worker.server import Server

pytestmark = pytest.mark.chaos

QUEUE = "partition"
TYPE = "chaos:hold"
# The worker tests' short intervals (the test picks its own concurrency), a slower janitor.
TIMING = {**{k: v for k, v in FAST.items() if k != "concurrency"}, "janitor_interval": 0.5}


@pytest.fixture
def proxy(redis_client: redis.Redis) -> Iterator[ChaosProxy]:
    """A chaos proxy in front of the test Redis (the flushed test database)."""
    kwargs = redis_client.connection_pool.connection_kwargs
    if "host" not in kwargs:
        pytest.fail("the partition tests proxy TCP: TEST_REDIS_URL must be a redis:// URL, not a unix socket")
    chaos = ChaosProxy(kwargs["host"], int(kwargs.get("port", 6379)))
    chaos.start()
    yield chaos
    chaos.stop()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in reversed(started):
        server.stop()


def start_server(servers: list[Server], url: str, registry: Registry, concurrency: int) -> Server:
    server = Server(WorkerConfig(redis_url=url, queues={QUEUE: 1}, concurrency=concurrency, **TIMING), registry)
    server.start()
    servers.append(server)
    return server


class CutOffWorker:
    """The handler of the worker behind the proxy: each of the first tasks holds until the test releases it or
    the worker cancels it; later tasks run straight through."""

    def __init__(self, held: list[str]) -> None:
        self.registry = Registry()
        self.gates = {task_id: threading.Event() for task_id in held}
        self.started: list[str] = []
        self.finished: list[str] = []
        self.stopped: list[str] = []

        @handler(TYPE, registry=self.registry)
        def hold(task: Task) -> None:
            self.started.append(task.id)
            gate = self.gates.get(task.id)
            while gate is not None and not gate.is_set():
                if task.cancelled:
                    self.stopped.append(task.id)
                    return
                time.sleep(0.01)
            self.finished.append(task.id)

    def release(self, ids: list[str]) -> None:
        for task_id in ids:
            self.gates[task_id].set()


@pytest.mark.parametrize("fault", ["blackhole", "reset"])
def test_a_partitioned_worker_stops_its_tasks_run_elsewhere_and_its_stale_acks_are_refused(
    fault: str, proxy: ChaosProxy, servers: list[Server], redis_url: str, redis_client: redis.Redis
):
    db = int(redis_client.connection_pool.connection_kwargs.get("db", 0) or 0)
    n = 2 * scale(4)
    ids = [f"held-{i:04d}" for i in range(n)]
    finished_early, cut_off_running = ids[: n // 2], ids[n // 2 :]
    cut = CutOffWorker(ids)
    direct_runs: list[str] = []
    direct_registry = Registry()

    @handler(TYPE, registry=direct_registry, retry_delay=lambda *_: 0.0)
    def run_directly(task: Task) -> None:
        direct_runs.append(task.id)
        task.write_result(b"direct")

    client, inspector = Client(redis_url), Inspector(redis_url)
    try:
        worker = start_server(servers, proxy.url(db), cut.registry, concurrency=n)
        for task_id in ids:
            client.enqueue(TYPE, queue=QUEUE, task_id=task_id, retention=600)
        wait_for(lambda: len(cut.started) == n, what="the proxied worker running every task")
        rescuer = start_server(servers, redis_url, direct_registry, concurrency=n)

        cut_at = time.monotonic()
        getattr(proxy, fault)()
        cut.release(finished_early)  # these succeed during the partition: their acks cannot get through
        wait_for(lambda: set(cut.finished) == set(finished_early), what="the released handlers returned")

        # The proxied worker notices its leases ran out and stops the rest; nothing of theirs is written.
        wait_for(lambda: worker.processor.leases_expired == len(cut_off_running), what="leases expired locally")
        wait_for(lambda: sorted(cut.stopped) == cut_off_running, what="the cut-off handlers saw the cancellation")

        # The directly connected worker recovers every task after its lease and runs it once.
        wait_for(lambda: sorted(direct_runs) == ids, what="every task run by the directly connected worker")
        wait_for(lambda: all(state_of(inspector, QUEUE, i) == "completed" for i in ids), what="all completed")
        recovered_at = time.monotonic()
        for task_id in ids:
            task = inspector.get_task(QUEUE, task_id)
            assert (task.result, task.retried, task.last_error) == (b"direct", 1, LEASE_EXPIRED)
        assert rescuer.recoverer.recovered == n

        proxy.heal()
        if fault == "blackhole":
            # Requests held in the partition arrive now, with the old lease tokens: refused, counted, no effect.
            wait_for(lambda: worker.acker.refused == len(finished_early), what="the stale acks refused")
        else:
            # The connections were reset: the outcomes waited in the syncer until their lease ran out.
            wait_for(lambda: worker.acker.abandoned == len(finished_early), what="the unsent acks abandoned")
            assert worker.acker.refused == 0
        for task_id in ids:
            assert inspector.get_task(QUEUE, task_id).result == b"direct"
        stats = inspector.queue_info(QUEUE)
        assert (stats.completed, stats.active, stats.retry, stats.pending) == (n, 0, 0, 0)

        # Healed, the proxied worker serves again.
        rescuer.stop()
        later = client.enqueue(TYPE, queue=QUEUE, retention=600)
        wait_for(lambda: state_of(inspector, QUEUE, later.id) == "completed", what="the healed worker ran new work")
        assert later.id in cut.finished

        record_figures(
            f"partition ({fault}) of one worker of two",
            enqueued=n,
            completed=stats.completed,
            lost=n - stats.completed,
            duplicated=len(finished_early),
            stopped_on_lease_expiry=worker.processor.leases_expired,
            stale_acks_refused=worker.acker.refused,
            acks_abandoned=worker.acker.abandoned,
            recovery_s=round(recovered_at - cut_at, 2),
        )
    finally:
        proxy.heal()
        cut.release(ids)
        client.close()
        inspector.broker.close()


def test_latency_below_the_lease_loses_and_repeats_nothing(
    proxy: ChaosProxy, servers: list[Server], redis_url: str, redis_client: redis.Redis
):
    db = int(redis_client.connection_pool.connection_kwargs.get("db", 0) or 0)
    registry = Registry()
    runs: list[str] = []

    @handler(TYPE, registry=registry)
    def record(task: Task) -> None:
        runs.append(task.id)

    proxy.delay(0.1)  # each way, so 0.2 s a round trip against a 2 s lease
    client, inspector = Client(redis_url), Inspector(redis_url)
    try:
        worker = start_server(servers, proxy.url(db), registry, concurrency=4)
        count = scale(20)
        ids = [client.enqueue(TYPE, queue=QUEUE, retention=600).id for _ in range(count)]
        wait_for(
            lambda: all(state_of(inspector, QUEUE, i) == "completed" for i in ids),
            timeout=60,
            what="every task completed through the slow link",
        )
        assert sorted(runs) == sorted(ids), "a task ran twice or not at all"
        assert all(inspector.get_task(QUEUE, i).retried == 0 for i in ids)
        assert (worker.processor.leases_expired, worker.acker.refused, worker.acker.abandoned) == (0, 0, 0)
        record_figures(
            "latency 0.1 s each way (lease 2 s)",
            enqueued=count,
            completed=len(set(runs)),
            lost=count - len(set(runs)),
            duplicated=len(runs) - len(set(runs)),
            stopped_on_lease_expiry=0,
            stale_acks_refused=0,
        )
    finally:
        client.close()
        inspector.broker.close()
