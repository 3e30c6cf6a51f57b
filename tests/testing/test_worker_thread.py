"""The plain testing helpers: ``WorkerThread`` runs a real worker in the test process and ``run_until_empty``
waits until a queue has nothing left to do now; ``test_redis_url`` refuses database 0, and ``xdist_worker_url``
gives each pytest-xdist worker a database of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from taskq.queues.engine import Client, FakeClock, Registry, Task, ValidationError, handler
from taskq.worker.testing import WorkerThread, run_until_empty, test_redis_url
from taskq.worker.testing.redis_db import xdist_worker_url


@pytest.fixture
def handlers() -> Registry:
    registry = Registry()

    @handler("ok", registry=registry)
    def ok(task: Task) -> None:
        task.write_result({"double": task.json() * 2})

    @handler("fail", registry=registry)
    def fail(task: Task) -> None:
        raise ValueError("always")

    @handler("fan:out", registry=registry)
    def fan_out(task: Task) -> None:  # enqueues more work while it runs: the run must wait for that too
        with Client(task.headers["redis"]) as client:
            client.enqueue_many([("ok", n) for n in range(task.json())], queue="low")

    return registry


@pytest.fixture
def client(redis_client: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Client]:
    with Client(redis_url, clock=clock) as c:
        yield c


@pytest.fixture
def worker(redis_client: redis.Redis, redis_url: str, handlers: Registry, clock: FakeClock) -> Iterator[WorkerThread]:
    with WorkerThread(redis_url, registry=handlers, clock=clock) as w:
        yield w


def test_run_until_empty_reports_what_ran(worker: WorkerThread, client: Client) -> None:
    ids = [client.enqueue("ok", n, retention=60).id for n in range(5)]
    client.enqueue("fail", max_retry=1)
    summary = worker.run_until_empty("default")
    assert (summary.queue, summary.processed, summary.failed, summary.succeeded) == ("default", 6, 1, 5)
    assert (summary.counts["completed"], summary.counts["retry"], summary.counts["pending"]) == (5, 1, 0)
    assert worker.inspector.get_task("default", ids[3]).result_json() == {"double": 6}


def test_retries_and_scheduled_tasks_wait_for_the_clock(worker: WorkerThread, client: Client, clock: FakeClock) -> None:
    client.enqueue("fail", max_retry=1)
    client.enqueue("ok", 1, process_in=600)
    first = worker.run_until_empty()
    assert (first.processed, first.counts["retry"], first.counts["scheduled"]) == (1, 1, 1)
    clock.advance(3600)  # past the retry delay (at most 1 + 15 + 29 * 2 s after the first failure) and the 600 s
    second = worker.run_until_empty()
    assert (second.processed, second.failed) == (2, 1)  # since the first run
    assert (second.counts["archived"], second.counts["retry"], second.counts["scheduled"]) == (1, 0, 0)


def test_a_queue_not_served_yet_is_added_and_work_enqueued_by_handlers_is_waited_for(
    worker: WorkerThread, client: Client, redis_url: str
) -> None:
    client.enqueue("fan:out", 20, headers={"redis": redis_url})
    assert worker.run_until_empty("default").processed == 1
    low = worker.run_until_empty("low")
    assert (low.processed, low.counts["pending"]) == (20, 0)


def test_a_queue_that_cannot_empty_times_out(worker: WorkerThread, client: Client) -> None:
    client.enqueue("ok", 0, queue="held")
    worker.inspector.pause_queue("held")
    with pytest.raises(TimeoutError, match="still has 1 task"):
        worker.run_until_empty("held", timeout=0.5)


def test_the_function_starts_and_stops_a_worker_of_its_own(
    redis_client: redis.Redis, redis_url: str, client: Client, handlers: Registry, clock: FakeClock
) -> None:
    client.enqueue_many([("ok", 1)] * 3, queue="mail")
    summary = run_until_empty("mail", redis_url=redis_url, registry=handlers, clock=clock)
    assert (summary.processed, summary.failed) == (3, 0)
    assert redis_client.scard(client.broker.keys.servers) == 0  # the worker deregistered when it stopped


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379", "redis://h:6379?db=0"])
def test_database_0_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="database 0"):
        test_redis_url(url)


def test_the_url_comes_from_the_argument_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKQ_TEST_REDIS_URL", "redis://127.0.0.1:6379/7")
    assert test_redis_url() == "redis://127.0.0.1:6379/7"
    assert test_redis_url("redis://127.0.0.1:6379/3") == "redis://127.0.0.1:6379/3"
    monkeypatch.delenv("TASKQ_TEST_REDIS_URL")
    assert test_redis_url() == "redis://127.0.0.1:6379/9"


@pytest.mark.parametrize(
    ("url", "worker", "expected"),
    [
        ("redis://127.0.0.1:6379/9", None, "redis://127.0.0.1:6379/9"),
        ("redis://127.0.0.1:6379/9", "gw0", "redis://127.0.0.1:6379/9"),
        ("redis://127.0.0.1:6379/9", "gw1", "redis://127.0.0.1:6379/8"),
        ("redis://:secret@h:6380/7?socket_timeout=5", "gw2", "redis://:secret@h:6380/5?socket_timeout=5"),
        ("redis://h:6379?db=9&socket_timeout=5", "gw1", "redis://h:6379?socket_timeout=5&db=8"),
        ("unix:///run/redis.sock?db=9", "gw1", "unix:///run/redis.sock?db=8"),
    ],
)
def test_each_xdist_worker_gets_the_database_below_the_previous_ones(url: str, worker: str | None, expected: str):
    assert xdist_worker_url(url, worker, allowed=range(1, 10)) == expected


@pytest.mark.parametrize(("url", "worker"), [("redis://h:6379/1", "gw1"), ("redis://h:6379/9", "gw9")])
def test_an_xdist_worker_is_never_given_database_0(url: str, worker: str) -> None:
    with pytest.raises(ValidationError, match=f"worker {worker} would use database 0"):
        xdist_worker_url(url, worker)


def test_an_xdist_workers_database_stays_in_the_allowed_range() -> None:
    with pytest.raises(ValidationError, match="between 1 and 9"):
        xdist_worker_url("redis://h:6379/12", "gw1", allowed=range(1, 10))
