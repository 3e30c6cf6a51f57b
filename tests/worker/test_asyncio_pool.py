"""What only the asyncio pool (worker/asyncio_pool/) has: how a worker chooses it, its event loop (uvloop when asked
for), and one loop doing fetch, run and ack. The semantics it shares with the thread pool (leases, fencing,
fetch-on-ack, order, pause, timeouts, cancel, shutdown) are the thread pool's own tests, run on both pools
(``worker_pool`` in test_lease.py, test_fetch_on_ack.py and test_processing.py)."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from worker_support import state_of, wait_for

from taskq.queues.engine import Inspector, MissingExtraError, Registry, Task, ValidationError, extras, handler
from taskq.worker.asyncio_pool.asyncio_processor import AsyncioProcessor, chosen_pool
from taskq.worker.asyncio_pool.event_loops import loop_factory
from taskq.worker.config import WorkerConfig
from taskq.worker.processor import Processor

Q = "default"


def registry_of(*kinds: str) -> Registry:
    """A registry with one handler of each kind: "async", "sync" or "spark" (a sync Spark handler)."""
    reg = Registry()
    for n, kind in enumerate(kinds):
        if kind == "async":

            async def run_async(task: Task) -> None:
                pass

            handler(f"t:{n}", registry=reg)(run_async)
        else:

            def run(task: Task) -> None:
                pass

            handler(f"t:{n}", registry=reg, spark=kind == "spark")(run)
    return reg


@pytest.mark.parametrize(
    ("kinds", "chosen"),
    [
        (("async", "async"), "asyncio"),
        (("async", "sync"), "thread"),
        (("async", "spark"), "thread"),
        ((), "thread"),
    ],
)
def test_auto_picks_the_asyncio_pool_only_when_every_handler_is_async(kinds, chosen):
    assert chosen_pool(WorkerConfig(pool="auto"), registry_of(*kinds)) == chosen


def test_auto_keeps_threads_when_a_resolver_may_route_a_type_to_a_sync_function():
    reg = registry_of("async")
    reg.resolve_with(lambda task_type: None)
    assert chosen_pool(WorkerConfig(pool="auto"), reg) == "thread"


def test_a_named_pool_is_kept_whatever_the_handlers():
    assert chosen_pool(WorkerConfig(pool="thread"), registry_of("async")) == "thread"
    assert chosen_pool(WorkerConfig(pool="asyncio"), registry_of("sync")) == "asyncio"


def test_an_unknown_event_loop_is_refused_with_a_named_error():
    with pytest.raises(ValidationError, match='event loop must be one of asyncio, uvloop, got "tokio"') as caught:
        WorkerConfig(event_loop="tokio")
    assert caught.value.op == "taskworker --event-loop"


def test_uvloop_asked_for_but_not_installed_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "uvloop", None)  # as a base install lacks it
    with pytest.raises(MissingExtraError, match=r'pip install "taskq\[uvloop\]"'):
        loop_factory("uvloop")


def test_the_server_runs_the_pool_it_chose(make_server, registry, client, inspector: Inspector):
    @handler("a:ok", registry=registry)
    async def ok(task: Task) -> None:
        pass

    server = make_server(pool="auto")
    assert isinstance(server.processor, AsyncioProcessor)
    info = client.enqueue("a:ok", retention=60)
    wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="the task completed")
    assert isinstance(make_server(pool="thread").processor, Processor)


def test_fetch_handler_and_ack_share_one_loop_thread(make_server, registry, client, inspector: Inspector):
    """Each handler runs on the pool's one loop, in the thread where the fetch loop and the ack writer run."""
    seen: list[tuple[str, int]] = []

    @handler("a:where", registry=registry)
    async def where(task: Task) -> None:
        seen.append((threading.current_thread().name, id(asyncio.get_running_loop())))

    server = make_server(pool="asyncio", concurrency=8)
    infos = client.enqueue_many([("a:where", b"")] * 30, queue=Q, retention=60)
    wait_for(lambda: all(state_of(inspector, Q, i.id) == "completed" for i in infos), what="every task completed")
    assert {s[0] for s in seen} == {"async-handlers"} and len({s[1] for s in seen}) == 1
    assert server.processor.inflight == {}
    assert server.acker.processed == 30


def test_graceful_shutdown_cancels_a_coroutine_past_the_grace_and_requeues_its_task(
    make_server, registry, client, inspector: Inspector
):
    started, cancelled = threading.Event(), threading.Event()

    @handler("a:long", registry=registry)
    async def long(task: Task) -> None:
        started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(60)
        cancelled.set()  # reached only by a cancellation: the sleep lasts longer than the test

    server = make_server(pool="asyncio", shutdown_timeout=0.3)
    info = client.enqueue("a:long", max_retry=3)
    assert started.wait(10)
    server.stop()
    assert cancelled.is_set()
    task = inspector.get_task(Q, info.id)
    assert task.state == "pending" and task.retried == 0 and task.last_error is None
    assert inspector.queue_info(Q).active == 0


def test_the_pool_runs_on_uvloop_when_asked(make_server, registry, client, inspector: Inspector):
    if extras.missing_modules("uvloop"):
        pytest.skip("uvloop is not installed here (make venv installs it with the uvloop extra)")
    loops: list[str] = []

    @handler("a:loop", registry=registry)
    async def which(task: Task) -> None:
        loops.append(type(asyncio.get_running_loop()).__module__)

    make_server(pool="asyncio", event_loop="uvloop")
    info = client.enqueue("a:loop", retention=60)
    wait_for(lambda: state_of(inspector, Q, info.id) == "completed", what="the task completed")
    assert loops == ["uvloop"]
