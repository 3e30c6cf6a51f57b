"""A worker under a queue's limits, with the shared FakeClock. Rate limit: it starts no more than the limit per
window, leaves the queue alone while the window is full (no dequeue calls at all while the clock stands still),
and starts the rest as soon as the clock opens the window. Concurrency cap: a finished task of a capped queue
makes it fetch again at once, not after the idle wait."""

from __future__ import annotations

import time

from worker_support import wait_for

from taskq.queues.engine import Keys, Task, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec

Q = "emails"


def test_a_rate_limited_queue_rests_until_its_window_opens(make_server, registry, client, inspector, r, clock):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, rate_limit=2, rate_period=1.0)}))
    ran: list[str] = []

    @handler("send", registry=registry)
    def send(task: Task) -> None:
        ran.append(task.id)

    server = make_server(start=False, queues={Q: 1})
    dequeues = [0]
    run = server.broker.run

    def counting(call):  # the real call, counted
        dequeues[0] += call.op == "dequeue"
        return run(call)

    server.broker.run = counting  # type: ignore[method-assign]
    server.start()
    client.enqueue_many([("send", {"n": n}) for n in range(5)], queue=Q)
    wait_for(lambda: len(ran) == 2, what="the first two tasks (the limit) ran")
    seen = dequeues[0]
    time.sleep(0.6)  # three idle waits: the clock stands still, so the window stays full
    assert dequeues[0] == seen, "the worker polled a queue whose window it knew to be full"
    assert len(ran) == 2 and inspector.queue_info(Q).pending == 3 and inspector.queue_info(Q).retry == 0

    clock.advance(1.0)
    wait_for(lambda: len(ran) == 4, what="two more once the window opened")
    clock.advance(1.0)
    wait_for(lambda: len(ran) == 5, what="the last one in the third window")
    starts = [int(f[b"at"]) for _, f in r.xrange(Keys().queue(Q).events) if f[b"to"] == b"active"]
    assert sorted(starts) == [starts[0]] * 2 + [starts[0] + 1000] * 2 + [starts[0] + 2000]


def test_a_finished_task_of_a_capped_queue_wakes_the_fetch_at_once(make_server, registry, client, r):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, concurrency_cap=1)}))
    ran: list[str] = []

    @handler("send", registry=registry)
    def send(task: Task) -> None:
        ran.append(task.id)

    make_server(queues={Q: 1}, idle_wait=3600)  # only a wake-up can end an idle wait within the test
    client.enqueue_many([("send", {"n": n}) for n in range(3)], queue=Q)
    wait_for(lambda: len(ran) == 3, what="three tasks one after the other under a cap of 1")
