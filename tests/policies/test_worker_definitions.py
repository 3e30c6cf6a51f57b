"""A running worker follows the queue definitions without a restart, and a queue's concurrency cap holds across
workers."""

from __future__ import annotations

import threading
import time

import pytest

from taskq.queues.engine import Registry, SkipRetry, Task, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec, RetentionRule
from taskq.queues.models import QueueDefinition

from .conftest import wait_for

pytestmark = pytest.mark.django_db


def test_a_running_worker_picks_up_new_definitions_and_weights(make_server, client, inspector, mirror):
    registry = Registry()
    ran: list[str] = []

    @handler("job", registry=registry)
    def job(task: Task) -> None:
        ran.append(task.queue)

    server = make_server(registry, follow_definitions=True)
    assert server.queues.weights() == {"default": 1}  # nothing defined yet

    alpha = mirror(lambda: QueueDefinition.objects.create(name="alpha", weight=3))
    wait_for(lambda: server.queues.weights() == {"alpha": 3}, what="alpha served")
    client.enqueue("job", {}, queue="alpha")
    wait_for(lambda: ran == ["alpha"], what="a task of the new queue ran")

    alpha.weight = 7
    mirror(alpha.save)
    mirror(lambda: QueueDefinition.objects.create(name="beta", weight=2, rank=-1))
    wait_for(lambda: server.queues.weights() == {"alpha": 7, "beta": 2}, what="weight change and beta served")
    assert set(server.processor.order.next()) == {"alpha", "beta"}
    client.enqueue("job", {}, queue="beta")
    wait_for(lambda: "beta" in ran, what="a task of the second new queue ran")
    assert "beta" in inspector.queues()  # registered for the console by the worker
    wait_for(
        lambda: any(s.queues == {"alpha": 7, "beta": 2} for s in inspector.servers()),
        what="the heartbeat publishes the new set",
    )

    mirror(alpha.delete)
    wait_for(lambda: server.queues.weights() == {"beta": 2}, what="alpha no longer served")
    client.enqueue("job", {}, queue="alpha")
    time.sleep(0.5)
    assert ran.count("alpha") == 1 and inspector.queue_info("alpha").pending == 1


def test_strict_workers_follow_the_ranks(make_server, r, redis_url):
    PolicyStore(Broker(conn=r)).write(
        PolicySet(queues={"low": QueueSpec("low", weight=9, rank=5), "high": QueueSpec("high", weight=1, rank=0)})
    )
    server = make_server(Registry(), follow_definitions=True, strict=True)
    assert server.processor.order.next() == ["high", "low"]


def test_the_command_line_wins_but_caps_still_apply(make_server, r):
    store = PolicyStore(Broker(conn=r))
    store.write(PolicySet(queues={"defined": QueueSpec("defined", 5), "mine": QueueSpec("mine", 1, concurrency_cap=2)}))
    server = make_server(Registry(), queues={"mine": 4})
    assert server.queues.weights() == {"mine": 4} and server.queues.cap("mine") == 2


def test_concurrency_cap_holds_across_two_workers(make_server, client, mirror, r):
    mirror(lambda: QueueDefinition.objects.create(name="capped", concurrency_cap=2))
    registry = Registry()
    lock = threading.Lock()
    running = [0]
    peak = [0]
    finished: list[str] = []

    @handler("slow", registry=registry)
    def slow(task: Task) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
            finished.append(task.id)

    # One worker follows the definitions, the other was started with --queues: the cap binds both.
    make_server(registry, follow_definitions=True, concurrency=4)
    make_server(registry, queues={"capped": 1}, concurrency=4)
    ids = [info.id for info in client.enqueue_many([("slow", {"n": n}) for n in range(16)], queue="capped")]
    wait_for(lambda: len(finished) == len(ids), timeout=30, what="every task ran")
    assert peak[0] == 2  # the cap was reached, never passed


def test_worker_archive_follows_the_queue_limits(make_server, client, inspector, r):
    PolicyStore(Broker(conn=r)).write(
        PolicySet(queues={"dead": QueueSpec("dead")}, retention=(RetentionRule(queue="dead", archive_max_size=3),))
    )
    registry = Registry()

    @handler("doomed", registry=registry)
    def doomed(task: Task) -> None:
        raise SkipRetry("no")

    make_server(registry, follow_definitions=True)
    for n in range(6):
        client.enqueue("doomed", {"n": n}, queue="dead")
    wait_for(
        lambda: inspector.queue_info("dead").pending == 0 and inspector.queue_info("dead").active == 0,
        what="every task archived",
    )
    assert inspector.queue_info("dead").archived == 3
