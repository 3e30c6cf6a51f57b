"""A rate-limit window learnt on the acker's path is honoured by the fetch thread.

With fetch-on-ack, the call that acknowledges a success also leases the queue's next task; when the queue's rate limit
is full it leases none and names the time its window opens. The acker's thread hands that to the processor
(``fill_slots``), and the fetch thread must then leave the queue alone until that time, with no dequeue call, and
sleep no longer than until then. Both threads' steps run here one after the other, on the test's thread, against a
real Redis and the shared FakeClock: nothing is timed."""

from __future__ import annotations

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec
from taskq.worker.attempt import Outcome
from taskq.worker.resting import RestingQueues

Q = "emails"


def test_a_window_an_ack_was_told_of_keeps_the_fetch_thread_off_the_queue(make_server, client, inspector, r, clock):
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={Q: QueueSpec(Q, rate_limit=2, rate_period=60.0)}))
    server = make_server(start=False, queues={Q: 1}, idle_wait=3600, prefetch=0)
    processor = server.processor
    server.definitions.run_once()  # the queue's rate limit, as a started worker reads it first
    client.enqueue_many([("send", {"n": n}) for n in range(3)], queue=Q)
    dequeues: list[str] = []
    run = server.broker.run

    def counting(call):  # the real call, recorded
        if call.op == "dequeue":
            dequeues.append(call.keys[0])
        return run(call)

    server.broker.run = counting  # type: ignore[method-assign]

    # The fetch thread's step: the first task takes one of the window's two starts.
    processor.capacity.take(1)
    queue, leased, _ = processor._dequeue(1)
    assert queue == Q and len(leased) == 1 and Q not in processor._resting
    (attempt,) = processor._hold(Q, leased, clock.now())

    # The acker's step: the success hands its slot over; the ack leases the next task into it, which takes the
    # window's last start, and is told until when the window is full; fill_slots records that and starts the task
    # (no handler is registered: it ends at once, and its outcome waits for the acker, which is not running).
    attempt.holds_slot = True
    assert server.acker.write([(attempt, Outcome("success"))]) == []
    assert Q in processor._resting and processor.capacity.busy == 0
    assert inspector.queue_info(Q).pending == 1 and len(processor.inflight) == 1

    # The fetch thread's next steps: no call for the resting queue, and an idle wait that ends when its window opens.
    dequeues.clear()
    assert processor._dequeue(1) == ("", [], True)
    assert dequeues == []
    assert 0 < processor._idle_wait() <= 60.0

    clock.advance(60.0)
    queue, leased, _ = processor._dequeue(1)
    assert queue == Q and len(leased) == 1 and Q not in processor._resting


def test_resting_queues_keep_the_soonest_window_and_forget_the_opened_ones():
    resting = RestingQueues()
    assert resting.soonest() is None and "a" not in resting
    resting.rest("a", 20.0)
    resting.rest("b", 10.0)
    assert "a" in resting and "b" in resting and resting.soonest() == 10.0
    resting.forget_opened(10.0)
    assert "b" not in resting and "a" in resting and resting.soonest() == 20.0
    resting.rest("a", 30.0)  # a later ack's window replaces the earlier one
    assert resting.soonest() == 30.0
