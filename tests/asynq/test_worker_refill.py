"""The asynq worker in this process, on real Redis: a handler thread writes its outcome and fetches the task for
its slot in one round trip, and the fetch thread takes a task for each free slot in one call. Every task still
runs once, holding a lease the heartbeat extends from the moment it is fetched; a task fetched for a slot whose
handler is async goes to the event loop, one of no handler is archived; a worker that stops fetches nothing more."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

from taskq.queues.engine import RedisUnavailableError, Registry, Task, handler
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.asynq.producer import AsynqClient
from taskq.worker.asynq.runtime import AsynqRuntime
from taskq.worker.config import WorkerConfig

from .go_asynq import wait_until

Q = AsynqQueueKeys("default")


def config(redis_url: str, concurrency: int, shutdown_timeout: float = 5.0) -> WorkerConfig:
    """A worker with asynq's 30 s lease, a quick heartbeat and a short idle wait."""
    quick = {"heartbeat_interval": 0.05, "idle_wait": 0.05}
    return WorkerConfig(redis_url=redis_url, concurrency=concurrency, shutdown_timeout=shutdown_timeout, **quick)


@pytest.fixture
def client(redis_url: str, r: redis.Redis) -> Iterator[AsynqClient]:
    with AsynqClient(redis_url) as producer:
        yield producer


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a handler thread waiting


def test_every_task_runs_once_leased_and_watched_by_the_heartbeat(
    redis_url: str, registry: Registry, client: AsynqClient, r: redis.Redis
) -> None:
    runs: list[tuple[str, bool, bool]] = []  # (task id, its lease is in Redis, the runner lists it)
    lock = threading.Lock()
    runtime = AsynqRuntime(config(redis_url, concurrency=3), registry=registry)

    def record(task: Task) -> None:
        leased = r.zscore(Q.lease, task.id) is not None
        watched = any(attempt.id == task.id for attempt in runtime.runner.snapshot())
        with lock:
            runs.append((task.id, leased, watched))

    @handler("sync", registry=registry)
    def sync(task: Task) -> None:
        record(task)

    @handler("async", registry=registry)
    async def in_loop(task: Task) -> None:
        record(task)

    handled = {f"s{n}" for n in range(60)} | {f"a{n}" for n in range(20)}
    for n in range(60):
        client.enqueue("sync", task_id=f"s{n}")
        if n % 3 == 0:
            client.enqueue("async", task_id=f"a{n // 3}")
            client.enqueue("nobody", task_id=f"x{n // 3}", max_retry=0)
    runtime.start()
    try:
        wait_until(lambda: int(r.get(Q.processed_total) or 0) == 100, 30)
    finally:
        runtime.stop()
    assert sorted(task_id for task_id, _, _ in runs) == sorted(handled)  # each once, none of "nobody"
    assert all(leased and watched for _, leased, watched in runs)
    assert {m.decode() for m in r.zrange(Q.archived, 0, -1)} == {f"x{n}" for n in range(20)}
    assert r.llen(Q.pending) == r.llen(Q.active) == r.zcard(Q.lease) == 0
    assert int(r.get(Q.failed_total) or 0) == 20


def test_a_stopping_worker_fetches_no_task_for_the_slots_its_handlers_free(
    redis_url: str, registry: Registry, client: AsynqClient, r: redis.Redis, gate: threading.Event
) -> None:
    started: list[str] = []

    @handler("hold", registry=registry)
    def hold(task: Task) -> None:
        started.append(task.id)
        gate.wait(30)

    for n in range(10):
        client.enqueue("hold", task_id=f"h{n}")
    runtime = AsynqRuntime(config(redis_url, concurrency=2, shutdown_timeout=30.0), registry=registry)
    runtime.start()
    wait_until(lambda: len(started) == 2, 30)
    stopping = threading.Thread(target=runtime.stop)
    stopping.start()
    wait_until(lambda: not runtime.runner.alive, 30)  # the fetch thread has ended: the worker is stopping
    gate.set()
    stopping.join(30)
    assert not stopping.is_alive()
    assert len(started) == 2
    assert int(r.get(Q.processed_total) or 0) == 2
    assert r.llen(Q.pending) == 8 and r.llen(Q.active) == 0


def test_a_handler_thread_writes_and_refills_on_one_connection_of_its_own(
    redis_url: str, registry: Registry, client: AsynqClient, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No checkout from the pool and back per task: each handler thread takes one connection, once."""

    @handler("sync", registry=registry)
    def sync(task: Task) -> None:
        pass

    for n in range(30):
        client.enqueue("sync", task_id=f"s{n}")
    runtime = AsynqRuntime(config(redis_url, concurrency=2), registry=registry)
    pool = runtime.broker.conn.connection_pool
    checkouts: Counter[str] = Counter()
    take = pool.get_connection

    def counted(*args: object, **kwargs: object) -> object:
        checkouts[threading.current_thread().name] += 1
        return take(*args, **kwargs)

    monkeypatch.setattr(pool, "get_connection", counted)
    runtime.start()
    try:
        wait_until(lambda: int(r.get(Q.processed_total) or 0) == 30, 30)
    finally:
        runtime.stop()
    by_handlers = {name: n for name, n in checkouts.items() if name.startswith("handler-")}
    assert by_handlers and set(by_handlers.values()) == {1}


class ScriptedOrder:
    """A queue order whose draws are given, in turn, so the test knows which queue each slot tries first."""

    def __init__(self, *draws: list[str]) -> None:
        self.draws = iter(draws)

    def next(self) -> list[str]:
        return next(self.draws)


def test_each_free_slot_draws_its_own_queue_order_as_each_of_asynqs_dequeues_does(
    redis_url: str, registry: Registry, client: AsynqClient, r: redis.Redis
) -> None:
    """Weighted queues: four free slots make four draws, and each takes its task from the queue its draw put first
    (three from ``high``, one from ``low``), not four from the first queue of one draw."""
    for n in range(10):
        client.enqueue("t", b"", queue="high", task_id=f"h{n}")
        client.enqueue("t", b"", queue="low", task_id=f"l{n}")
    runtime = AsynqRuntime(config(redis_url, concurrency=4), registry=registry)
    high_first, low_first = ["high", "low"], ["low", "high"]
    runtime.runner.order = ScriptedOrder(high_first, low_first, high_first, high_first)
    taken = runtime.runner._dequeue(4)
    assert Counter(one.message.queue for one in taken) == {"high": 3, "low": 1}
    assert sorted(one.message.id for one in taken) == ["h0", "h1", "h2", "l0"]  # the oldest of each
    assert r.llen(AsynqQueueKeys("high").active) == 3 and r.llen(AsynqQueueKeys("low").active) == 1


def test_tasks_leased_before_redis_fails_mid_fetch_are_handed_on_not_left_to_their_lease(
    redis_url: str, registry: Registry, client: AsynqClient, r: redis.Redis
) -> None:
    """Two draws make two calls; when the second meets Redis down, the task the first leased still goes to its
    slot (it would otherwise sit leased and unrun until the recoverer took it back)."""
    client.enqueue("t", b"", queue="high", task_id="h0")
    client.enqueue("t", b"", queue="low", task_id="l0")
    runtime = AsynqRuntime(config(redis_url, concurrency=2), registry=registry)
    runtime.runner.order = ScriptedOrder(["high", "low"], ["low", "high"])
    store, calls = runtime.runner.store, []

    def dequeue_many(queues: list[str], count: int, lease: float):
        calls.append(queues[0])
        if len(calls) == 2:
            raise RedisUnavailableError("connection refused", op="asynq_worker.dequeue")
        return type(store).dequeue_many(store, queues, count, lease)

    runtime.runner.store.dequeue_many = dequeue_many  # type: ignore[method-assign]
    taken = runtime.runner._dequeue(2)
    assert calls == ["high", "low"] and [one.message.id for one in taken] == ["h0"]
    assert runtime.runner._failing  # the outage is logged once; the next fetch that succeeds says Redis is back
