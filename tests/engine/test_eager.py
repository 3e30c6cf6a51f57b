"""Eager mode: ``Client(eager=True)`` runs the handler inline and writes nothing to Redis.

Most tests run against the real test database and assert it stays empty; one uses a Redis URL where nothing
listens, to show eager mode needs no Redis at all.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine import (
    Client,
    FakeClock,
    HandlerNotFoundError,
    Registry,
    RetryWithoutFailure,
    SkipRetry,
    Task,
    ValidationError,
    handler,
    process_defaults,
)
from taskq.queues.engine import client as client_module

NOWHERE = "redis://127.0.0.1:1/8"  # nothing listens on port 1


@pytest.fixture
def handlers() -> Registry:
    return Registry()


@pytest.fixture
def eager(r: redis.Redis, redis_url: str, handlers: Registry, clock: FakeClock) -> Iterator[Client]:
    c = Client(redis_url, clock=clock, eager=True, registry=handlers)
    yield c
    c.close()
    assert r.dbsize() == 0, "eager mode wrote to Redis"


@pytest.fixture
def lenient(r: redis.Redis, redis_url: str, handlers: Registry, clock: FakeClock) -> Iterator[Client]:
    c = Client(redis_url, clock=clock, eager=True, eager_propagates=False, registry=handlers)
    yield c
    c.close()
    assert r.dbsize() == 0, "eager mode wrote to Redis"


def test_the_handler_runs_in_the_calling_thread_with_a_real_task(eager: Client, handlers: Registry) -> None:
    seen: dict[str, Any] = {}

    @handler("email:deliver", registry=handlers)
    def deliver(task: Task) -> None:
        seen.update(thread=threading.get_ident(), task=task, to=task.json()["to"])
        task.progress(1, 2)
        task.write_result({"sent": True})

    info = eager.enqueue(
        "email:deliver", {"to": "ada@example.com"}, queue="critical", headers={"trace": "t1"}, max_retry=5
    )
    assert seen["thread"] == threading.get_ident()
    task = seen["task"]
    assert isinstance(task, Task)
    assert (task.id, task.type, task.queue, task.headers, task.retried, task.max_retry) == (
        info.id,
        "email:deliver",
        "critical",
        {"trace": "t1"},
        0,
        5,
    )
    assert seen["to"] == "ada@example.com"
    assert info.state == "completed"
    assert info.result_json() == {"sent": True}
    assert info.progress == (1, 2)
    assert info.completed_at is not None and info.completed_at.timestamp() == eager.clock.now()
    assert info.last_error is None


def test_routing_takes_the_longest_prefix_and_middleware_wraps_the_run(eager: Client, handlers: Registry) -> None:
    calls: list[str] = []

    @handlers.use
    def around(task: Task) -> Iterator[None]:
        calls.append(f"before {task.type}")
        yield
        calls.append("after")

    handler("image:", registry=handlers)(lambda task: calls.append("image:"))
    handler("image:resize", registry=handlers)(lambda task: calls.append("image:resize"))
    eager.enqueue("image:resize:small")
    eager.enqueue("image:crop")
    assert calls == ["before image:resize:small", "image:resize", "after", "before image:crop", "image:", "after"]


def test_the_handlers_exception_is_raised_to_the_caller_by_default(eager: Client, handlers: Registry) -> None:
    boom = ConnectionError("smtp down")

    @handler("email:deliver", registry=handlers)
    def deliver(task: Task) -> None:
        raise boom

    with pytest.raises(ConnectionError) as raised:
        eager.enqueue("email:deliver", b"x")
    assert raised.value is boom


def test_skip_retry_is_raised_too_but_retry_without_failure_is_not(eager: Client, handlers: Registry) -> None:
    @handler("a", registry=handlers)
    def skip(task: Task) -> None:
        raise SkipRetry("no address")

    @handler("b", registry=handlers)
    def later(task: Task) -> None:
        raise RetryWithoutFailure("warming up")

    with pytest.raises(SkipRetry):
        eager.enqueue("a")
    info = eager.enqueue("b")
    assert (info.state, info.last_error, info.retried) == ("retry", "RetryWithoutFailure: warming up", 0)
    assert info.next_process_at is not None and info.next_process_at.timestamp() >= eager.clock.now() + 15


@pytest.mark.parametrize(
    "raised, max_retry, state",
    [
        (ValueError("bad"), 3, "retry"),
        (ValueError("bad"), 0, "archived"),
        (SkipRetry("no address"), 3, "archived"),
    ],
)
def test_without_propagation_the_info_says_where_a_worker_would_put_the_task(
    lenient: Client, handlers: Registry, raised: Exception, max_retry: int, state: str
) -> None:
    def fail(task: Task) -> None:
        task.write_result(b"partial")
        raise raised

    handler("job", registry=handlers, retry_delay=lambda retried, exc, task: 42.0 + retried)(fail)
    info = lenient.enqueue("job", max_retry=max_retry)
    assert info.state == state
    expected_next = lenient.clock.now() + 42 if state == "retry" else None
    assert (info.next_process_at and info.next_process_at.timestamp()) == expected_next
    assert info.last_error == f"{type(raised).__name__}: {raised}"
    assert info.last_failed_at is not None and info.completed_at is None
    assert info.result == b"partial"


def test_an_unknown_type_is_a_named_error(eager: Client) -> None:
    with pytest.raises(HandlerNotFoundError, match='no handler for task type "nobody:home"') as raised:
        eager.enqueue("nobody:home")
    assert raised.value.code == "no_handler" and raised.value.op == "client.enqueue"


def test_bad_input_is_refused_before_the_handler_runs(eager: Client, handlers: Registry) -> None:
    calls: list[Task] = []
    handler("job", registry=handlers)(calls.append)
    with pytest.raises(ValidationError, match="unknown option"):
        eager.enqueue("job", colour="red")
    with pytest.raises(ValidationError, match="max_retry"):
        eager.enqueue("job", max_retry=-1)
    assert calls == []


def test_async_handlers_run_to_their_end(eager: Client, handlers: Registry) -> None:
    @handler("async:job", registry=handlers)
    async def job(task: Task) -> None:
        await asyncio.sleep(0)
        task.write_result({"n": task.json()["n"] * 2})

    assert eager.enqueue("async:job", {"n": 21}).result_json() == {"n": 42}


def test_an_async_handler_cannot_run_inside_a_running_loop(eager: Client, handlers: Registry) -> None:
    ran: list[Task] = []

    @handler("async:job", registry=handlers)
    async def job(task: Task) -> None:
        ran.append(task)

    async def enqueue_from_a_coroutine() -> None:
        eager.enqueue("async:job")

    with pytest.raises(ValidationError, match="inside a running event loop"):
        asyncio.run(enqueue_from_a_coroutine())
    assert ran == []


def test_enqueue_many_runs_each_in_order(eager: Client, handlers: Registry) -> None:
    order: list[Any] = []
    handler("n", registry=handlers)(lambda task: order.append(task.json()))
    infos = eager.enqueue_many([("n", 1), {"type": "n", "payload": 2, "queue": "low"}, ("n", 3)])
    assert order == [1, 2, 3]
    assert [(i.queue, i.state) for i in infos] == [
        ("default", "completed"),
        ("low", "completed"),
        ("default", "completed"),
    ]


def test_the_function_style_api_applies_the_handlers_defaults(eager: Client, handlers: Registry) -> None:
    queues: list[str] = []
    deliver = handler("email:deliver", queue="critical", registry=handlers)(lambda task: queues.append(task.queue))
    assert deliver.enqueue(b"", client=eager).queue == "critical"
    assert deliver.enqueue(b"", client=eager, queue="bulk").queue == "bulk"
    assert queues == ["critical", "bulk"]


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.enqueue("job", group="g"),
        lambda c: c.enqueue("job", after=["a" * 32]),
        lambda c: c.wait("a" * 32),
        lambda c: c.wait_workflow("w"),
        lambda c: c.submit(None),
    ],
)
def test_what_needs_a_worker_is_refused(eager: Client, handlers: Registry, call: Any) -> None:
    calls: list[Task] = []
    handler("job", registry=handlers)(calls.append)
    with pytest.raises(ValidationError, match="eager mode cannot"):
        call(eager)
    assert calls == []


def test_no_redis_is_needed(handlers: Registry) -> None:
    handler("job", registry=handlers)(lambda task: task.write_result(b"ok"))
    with Client(NOWHERE, eager=True, registry=handlers) as c:
        assert c.enqueue("job", unique=60, process_in=3600).result == b"ok"


def test_the_default_client_is_eager_when_tasks_eager_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # As in a process without Django: no client set, and none deferred to the Django settings' (taskq.queues.apps).
    monkeypatch.setattr(process_defaults, "_deferred", None)
    monkeypatch.setattr(process_defaults, "_client", None)
    monkeypatch.setenv("REDIS_URL", NOWHERE)
    monkeypatch.setenv("TASKS_EAGER", "true")
    assert client_module.default_client().eager is not None
    monkeypatch.setattr(process_defaults, "_client", None)
    monkeypatch.setenv("TASKS_EAGER", "0")
    assert client_module.default_client().eager is None


def test_the_task_says_it_runs_inline_and_its_journal_is_returned(lenient: Client, handlers: Registry) -> None:
    @handler("journaled", registry=handlers)
    def journaled(task: Task) -> None:
        task.write_journal([{"inline": task.inline}])
        raise ValueError("after writing")

    info = lenient.enqueue("journaled", max_retry=0)
    assert info.state == "archived"
    assert info.journal == b'[{"inline":true}]'
