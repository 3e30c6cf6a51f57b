"""Fetch-on-ack in a running worker: the slot a success frees is filled by the script that acknowledges it, only
from the queue the worker's order would try first, never while the worker is quiet, and a capped queue still runs
no more than its cap. Which tasks came by an ack is recorded by a spy around ``Processor.fill_slots`` (the real
method runs). Time is the shared FakeClock; nothing is timed.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from worker_support import POOLS, wait_for

from taskq.queues.engine import Task, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec


@pytest.fixture(params=POOLS)
def worker_pool(request: pytest.FixtureRequest) -> str:
    """Every test of this module runs on the thread pool and on the asyncio pool (tests/worker/conftest.py)."""
    return str(request.param)


Q = "default"


def recorder(registry, hold_first: bool = False) -> tuple[threading.Event, threading.Event, list[str]]:
    """``step`` records every task's id when it starts; with ``hold_first`` the first blocks until ``release``."""
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    @handler("step", registry=registry)
    def step(task: Task) -> None:
        ran.append(task.id)
        if len(ran) == 1:
            started.set()
            if hold_first:
                release.wait(10)

    return started, release, ran


def filled_by_acks(server) -> list[str]:
    """The ids of the tasks the worker's acks leased from now on, in order."""
    filled: list[str] = []
    original = server.processor.fill_slots

    def spy(queue, leased, slots):
        filled.extend(item.id for item in leased)
        original(queue, leased, slots)

    server.processor.fill_slots = spy
    return filled


def states(inspector, queue: str = Q) -> tuple[int, int]:
    info = inspector.queue_info(queue)
    return info.pending, info.active


def test_each_success_leases_the_next_task_in_its_ack(make_server, registry, client, inspector):
    started, release, ran = recorder(registry, hold_first=True)
    server = make_server(concurrency=1, prefetch=0)
    filled = filled_by_acks(server)
    first = client.enqueue("step")
    assert started.wait(10)  # the fetch thread took it: the slot is busy
    rest = [info.id for info in client.enqueue_many([("step", b"")] * 5)]
    release.set()
    wait_for(lambda: len(ran) == 6 and states(inspector) == (0, 0), what="all six ran")
    # One slot: after the first, every task came with the ack of the one before it, oldest first.
    assert ran == [first.id, *rest]
    assert filled == rest


def test_without_fetch_on_ack_the_fetch_thread_fills_every_slot(make_server, registry, client, inspector):
    started, release, ran = recorder(registry, hold_first=True)
    server = make_server(concurrency=1, prefetch=0, fetch_on_ack=False)
    assert server.acker.refill is None
    first = client.enqueue("step")
    assert started.wait(10)
    rest = [info.id for info in client.enqueue_many([("step", b"")] * 3)]
    release.set()
    wait_for(lambda: len(ran) == 4 and states(inspector) == (0, 0), what="all four ran")
    assert ran == [first.id, *rest]


def test_a_quiet_worker_leases_nothing_on_ack(make_server, registry, client, inspector):
    started, release, ran = recorder(registry, hold_first=True)
    server = make_server(concurrency=1, prefetch=0)
    filled = filled_by_acks(server)
    first = client.enqueue("step")
    assert started.wait(10)
    client.enqueue_many([("step", b"")] * 2)
    server.processor.quiet()
    release.set()
    wait_for(lambda: states(inspector) == (2, 0), what="the first acknowledged, the others left pending")
    assert ran == [first.id] and filled == []


def test_an_ack_leases_only_from_the_queue_the_order_tries_first(make_server, registry, client, inspector):
    # Strict order: "high" comes first. The acks of "low" tasks must not lease "low" tasks while "high" would be
    # tried first, so every slot goes back to the fetch thread, which looks at "high" before "low".
    started, release, ran = recorder(registry, hold_first=True)
    server = make_server(concurrency=1, prefetch=0, queues={"high": 2, "low": 1}, strict=True)
    filled = filled_by_acks(server)
    client.enqueue("step", queue="low")
    assert started.wait(10)
    client.enqueue_many([("step", b"")] * 3, queue="low")
    release.set()
    wait_for(lambda: len(ran) == 4 and states(inspector, "low") == (0, 0), what="all four ran")
    assert filled == []


def test_acks_of_the_first_queue_in_strict_order_lease_from_it(make_server, registry, client, inspector):
    started, release, ran = recorder(registry, hold_first=True)
    server = make_server(concurrency=1, prefetch=0, queues={"high": 2, "low": 1}, strict=True)
    filled = filled_by_acks(server)
    client.enqueue("step", queue="high")
    assert started.wait(10)
    rest = [info.id for info in client.enqueue_many([("step", b"")] * 3, queue="high")]
    release.set()
    wait_for(lambda: len(ran) == 4 and states(inspector, "high") == (0, 0), what="all four ran")
    assert filled == rest


def test_a_capped_queue_never_runs_more_than_its_cap(make_server, registry, client, inspector, r):
    # Cap 1 with 3 slots: every ack may lease only the slot it freed in the queue, never a second one.
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, concurrency_cap=1)}))
    running, most, finished = [0], [0], [0]
    lock = threading.Lock()

    @handler("capped", registry=registry)
    def capped(task: Task) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.005)  # not a timing assertion: only widens the window in which two would overlap
        with lock:
            running[0] -= 1
            finished[0] += 1

    server = make_server(concurrency=3, prefetch=0, queues={Q: 1})
    filled = filled_by_acks(server)
    client.enqueue_many([("capped", b"")] * 20)
    wait_for(lambda: finished[0] == 20 and states(inspector) == (0, 0), what="all ran")
    assert most[0] == 1
    assert filled  # the acks did lease (the cap admitted the slot each freed)


def test_async_handlers_get_their_next_task_from_the_ack_too(make_server, registry, client, inspector):
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    @handler("astep", registry=registry)
    async def astep(task: Task) -> None:
        ran.append(task.id)
        if len(ran) == 1:
            started.set()
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)

    server = make_server(concurrency=1, prefetch=0)
    filled = filled_by_acks(server)
    first = client.enqueue("astep")
    assert started.wait(10)
    rest = [info.id for info in client.enqueue_many([("astep", b"")] * 4)]
    release.set()
    wait_for(lambda: len(ran) == 5 and states(inspector) == (0, 0), what="all five ran")
    assert ran == [first.id, *rest]
    assert filled == rest
