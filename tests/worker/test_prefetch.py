"""Prefetch: a worker leases up to ``prefetch`` tasks beyond its free slots, and they wait in it for a slot.

Checked with one slot held by a blocking handler and the tasks enqueued before the worker starts (its first
fetch takes the free slot plus the prefetch): no more than ``prefetch`` tasks wait (the rest stay pending), the
waiting ones are not reported as running, the heartbeat extends their leases, an operator's cancel ends one
before it starts, shutdown requeues them unstarted, and a capped or rate-limited queue is never fetched beyond
its free slots. Time is the shared FakeClock; nothing is timed.
"""

from __future__ import annotations

import threading

from worker_support import wait_for

from taskq.queues.engine import Keys, Task, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec

Q = "default"


def blocker(registry) -> tuple[threading.Event, threading.Event, list[str]]:
    """``hold``: the first task blocks until ``release``; every task's id is recorded when it starts."""
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    @handler("hold", registry=registry)
    def hold(task: Task) -> None:
        ran.append(task.id)
        if len(ran) == 1:
            started.set()
            release.wait(10)

    return started, release, ran


def states(inspector, queue: str = Q) -> tuple[int, int]:
    info = inspector.queue_info(queue)
    return info.pending, info.active


def test_at_most_prefetch_tasks_wait_leased_and_they_start_when_the_slot_frees(
    make_server, registry, client, inspector
):
    started, release, ran = blocker(registry)
    first = client.enqueue("hold")
    client.enqueue_many([("hold", b"")] * 4)
    server = make_server(concurrency=1, prefetch=2)
    assert started.wait(10)
    wait_for(lambda: states(inspector) == (2, 3), what="two tasks prefetched behind the running one")
    assert list(server.processor.running()) == [first.id]  # the waiting ones are not reported as running
    assert ran == [first.id]
    release.set()
    wait_for(lambda: len(ran) == 5 and states(inspector) == (0, 0), what="all five ran")


def test_the_heartbeat_extends_the_leases_of_prefetched_tasks(make_server, registry, client, inspector, r, clock):
    started, release, ran = blocker(registry)
    client.enqueue("hold")
    waiting = client.enqueue("hold")
    make_server(concurrency=1, prefetch=1)  # lease 2 s of engine time
    assert started.wait(10)
    lease = Keys().queue(Q).lease
    wait_for(lambda: r.zscore(lease, waiting.id) is not None, what="the second task prefetched")
    taken = r.zscore(lease, waiting.id)
    clock.advance(1.5)
    wait_for(lambda: r.zscore(lease, waiting.id) > taken + 1000, what="its lease extended by the heartbeat")
    clock.advance(1.5)  # past the first expiry: the recoverer must leave the extended lease alone
    wait_for(lambda: r.zscore(lease, waiting.id) > taken + 2500, what="extended again")
    release.set()
    wait_for(lambda: ran[1:] == [waiting.id] and states(inspector) == (0, 0), what="it ran once, after the first")


def test_a_cancelled_prefetched_task_never_starts(make_server, registry, client, inspector, r):
    started, release, ran = blocker(registry)
    client.enqueue("hold")
    waiting = client.enqueue("hold", max_retry=0)
    server = make_server(concurrency=1, prefetch=1)
    assert started.wait(10)
    wait_for(lambda: states(inspector) == (0, 2), what="the second task prefetched")
    assert server.processor.cancel(Q, waiting.id)
    wait_for(lambda: inspector.get_task(Q, waiting.id).state == "archived", what="the cancel written")
    release.set()
    later = client.enqueue("hold")
    wait_for(lambda: later.id in ran, what="a later task ran")
    assert waiting.id not in ran
    assert "cancelled by an operator" in inspector.get_task(Q, waiting.id).last_error


def test_shutdown_requeues_prefetched_tasks_unstarted(make_server, registry, client, inspector):
    started, release, ran = blocker(registry)
    first = client.enqueue("hold")
    rest = client.enqueue_many([("hold", b"")] * 2)
    server = make_server(concurrency=1, prefetch=2, shutdown_timeout=30)
    assert started.wait(10)
    wait_for(lambda: states(inspector) == (0, 3), what="two tasks prefetched")
    stopping = threading.Thread(target=server.stop)
    stopping.start()
    try:
        wait_for(lambda: not server.processor.alive, what="the worker stopped fetching")
    finally:
        release.set()  # the running task ends within the shutdown timeout: nothing is interrupted
    stopping.join(30)
    assert ran == [first.id] and inspector.queue_info(Q).active == 0
    for info in rest:
        task = inspector.get_task(Q, info.id)
        assert (task.state, task.retried, task.last_error) == ("pending", 0, None)


def test_a_capped_queue_is_not_fetched_beyond_its_free_slots(make_server, registry, client, inspector, r):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, concurrency_cap=2)}))
    started, release, ran = blocker(registry)
    client.enqueue_many([("hold", b"")] * 4)
    make_server(concurrency=1, prefetch=5, queues={Q: 1})
    assert started.wait(10)
    # One free slot: the fetch takes one task; with prefetch it would take two (the cap's free slots).
    assert states(inspector) == (3, 1)
    release.set()
    wait_for(lambda: len(ran) == 4, what="the rest ran")


def test_a_rate_limited_queue_is_not_fetched_ahead(make_server, registry, client, inspector, r):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, rate_limit=100, rate_period=1.0)}))
    started, release, ran = blocker(registry)
    client.enqueue_many([("hold", b"")] * 4)
    make_server(concurrency=1, prefetch=5, queues={Q: 1})
    assert started.wait(10)
    assert states(inspector) == (3, 1)  # the limit admits 100 starts, yet only the free slot was filled
    release.set()
    wait_for(lambda: len(ran) == 4, what="the rest ran")


def test_the_thread_whose_handler_returned_runs_the_next_prefetched_task_itself(
    make_server, registry, client, inspector
):
    """With one slot and tasks waiting prefetched, each next task runs on the same handler thread, in order,
    without giving the slot back to the fetch thread in between."""
    started, release, ran = blocker(registry)
    threads: list[str] = []

    @handler("note", registry=registry)
    def note(task: Task) -> None:
        ran.append(task.id)
        threads.append(threading.current_thread().name)

    first = client.enqueue("hold")
    rest = [info.id for info in client.enqueue_many([("note", b"")] * 3)]
    server = make_server(concurrency=1, prefetch=3)
    assert started.wait(10)
    wait_for(lambda: states(inspector) == (0, 4), what="three tasks prefetched behind the running one")
    releases = []
    original = server.processor.capacity.release
    server.processor.capacity.release = lambda: (releases.append(1), original())[1]  # count slots given back
    release.set()
    wait_for(lambda: len(ran) == 4 and states(inspector) == (0, 0), what="all four ran")
    assert ran == [first.id, *rest]
    assert threads == ["handler-1"] * 3
    assert len(releases) == 1  # only the last task gave its slot back


def test_a_prefetched_task_of_the_other_kind_is_left_to_the_fetch_thread(make_server, registry, client, inspector):
    """A sync handler's thread does not take over an async task (nor the loop a sync one): the fetch thread
    starts it when the slot frees, and every task runs once."""
    started, release, ran = blocker(registry)
    kinds: list[str] = []

    @handler("async-note", registry=registry)
    async def async_note(task: Task) -> None:
        ran.append(task.id)
        kinds.append("async")

    @handler("sync-note", registry=registry)
    def sync_note(task: Task) -> None:
        ran.append(task.id)
        kinds.append("sync")

    client.enqueue("hold")
    client.enqueue_many([("async-note", b""), ("sync-note", b""), ("async-note", b""), ("async-note", b"")])
    make_server(concurrency=1, prefetch=4)
    assert started.wait(10)
    wait_for(lambda: states(inspector) == (0, 5), what="four tasks prefetched behind the running one")
    release.set()
    wait_for(lambda: len(ran) == 5 and states(inspector) == (0, 0), what="all five ran")
    assert kinds == ["async", "sync", "async", "async"]
    assert len(set(ran)) == 5


def test_with_every_slot_busy_the_fetch_thread_tops_the_prefetched_tasks_up(make_server, registry, client, inspector):
    """When the handler thread has taken half of the prefetched tasks, the fetch thread leases more while the
    only slot is still busy, so the next ones never wait for a round trip."""
    gates = [threading.Event() for _ in range(10)]
    ran: list[int] = []

    @handler("gate", registry=registry)
    def gate(task: Task) -> None:
        ran.append(int(task.payload))
        gates[int(task.payload)].wait(10)

    client.enqueue_many([("gate", str(i).encode()) for i in range(10)])
    make_server(concurrency=1, prefetch=4)
    wait_for(lambda: ran == [0] and states(inspector) == (5, 5), what="one running, four prefetched")
    gates[0].set()
    # three still prefetched, more than half: nothing more is fetched
    wait_for(lambda: ran == [0, 1] and states(inspector) == (5, 4), what="the second task running")
    gates[1].set()
    # the third one leaves two prefetched, half of four: two more are leased while the third still runs
    wait_for(lambda: ran == [0, 1, 2] and states(inspector) == (3, 5), what="two more leased ahead")
    for g in gates:
        g.set()
    wait_for(lambda: len(ran) == 10 and states(inspector) == (0, 0), what="all ten ran")
    assert ran == list(range(10))
