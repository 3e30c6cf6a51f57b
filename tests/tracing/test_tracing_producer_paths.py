"""The other producer paths carry the context too, on a real Redis: ``AsyncClient`` (enqueue, enqueue_many,
submit), a workflow whose member released later by its dependency still carries the submitting call's context (a
real worker runs the first member), a periodic entry's fire (a root span per fire) and its run now (a child of the
operator's span), and asynq-format producers (asynq's message has a headers field)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from opentelemetry.trace import SpanKind

from taskq.queues.engine import AsyncClient, Client, Registry, Task, chain, handler, sig, tracing
from taskq.queues.engine.asynq import AsyncAsynqClient, AsynqClient
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.scheduler_store import SchedulerStore
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server
from tests.worker.worker_support import FAST, running_servers, wait_for

from .test_tracing_producer_client import carried_ids, finished, ids_of


def test_the_async_client_carries_the_context_on_every_path(spans, r, redis_url, inspector):
    async def produce():
        async with AsyncClient(redis_url, policies=False) as client:
            with tracing.tracer().start_as_current_span("request") as request:
                one = await client.enqueue("a", queue="aio")
                many = await client.enqueue_many([("b", 1), ("c", 2)], queue="aio")
                flow = await client.submit(chain(sig("d"), sig("e")), queue="aio")
            return request, one, many, flow

    request, one, many, flow = asyncio.run(produce())
    sends = finished(spans, "send aio")
    assert len(sends) == 3 and all(s.parent.span_id == request.get_span_context().span_id for s in sends)
    single, batch, submit = sends
    assert carried_ids(inspector.get_task("aio", one.id).headers) == ids_of(single)
    creates = finished(spans, "create aio")
    assert [carried_ids(inspector.get_task("aio", i.id).headers) for i in many] == [ids_of(c) for c in creates]
    assert [ids_of(link.context) for link in batch.links] == [ids_of(c) for c in creates]
    members = [inspector.get_task("aio", m.id) for m in flow.members]
    assert [carried_ids(m.headers) for m in members] == [ids_of(submit)] * 2


def test_a_member_released_by_its_dependency_still_carries_the_submitting_context(spans, r, redis_url, clock):
    registry_headers: list[dict[str, str]] = []
    lock = threading.Lock()
    registry = Registry()

    @handler("step", registry=registry)
    def step(task: Task) -> None:
        with lock:
            registry_headers.append(dict(task.headers))

    with Client(redis_url, clock=clock, policies=False) as client, running_servers() as start:
        with tracing.tracer().start_as_current_span("request") as request:
            flow = client.submit(chain(sig("step", 1), sig("step", 2)), queue="wf")
        assert [m.state for m in flow.members] == ["pending", "waiting"]
        start(Server(WorkerConfig(redis_url=redis_url, queues={"wf": 1}, **FAST), registry, clock=clock))
        wait_for(lambda: len(registry_headers) == 2, what="both members to run")

    [submit] = finished(spans, "send wf")
    assert submit.kind == SpanKind.PRODUCER and submit.parent.span_id == request.get_span_context().span_id
    assert [carried_ids(h) for h in registry_headers] == [ids_of(submit)] * 2


def test_a_periodic_fire_is_a_root_span_whose_context_the_task_carries(spans, r, redis_url, clock, inspector):
    entry = make_entry("@every 10s", "report", {"n": 1}, queue="cron", options={"headers": {"mine": "kept"}})
    broker = Broker(redis_url, clock=clock)
    try:
        store = SchedulerStore(broker)
        with tracing.tracer().start_as_current_span("unrelated"):  # a fire joins no trace that happens to be open
            assert store.fire(entry, clock.now() - 1) == "enqueued"
    finally:
        broker.close()

    [fire] = finished(spans, "send cron")
    assert fire.parent is None and fire.kind == SpanKind.PRODUCER
    task_id = entry.task_id(int((clock.now() - 1) * 1000))
    assert fire.attributes["messaging.message.id"] == task_id
    assert fire.attributes["taskq.periodic.entry"] == entry.id
    headers = inspector.get_task("cron", task_id).headers
    assert carried_ids(headers) == ids_of(fire) and headers["mine"] == "kept"


def test_a_periodic_run_now_is_a_child_of_the_operators_span(spans, r, redis_url, clock, inspector):
    entry = make_entry("@every 10s", "report", queue="cron")
    broker = Broker(redis_url, clock=clock)
    try:
        with tracing.tracer().start_as_current_span("operator") as operator:
            task_id, status = SchedulerStore(broker).run_now(entry, actor="ada")
    finally:
        broker.close()
    assert status == "enqueued"
    [run] = finished(spans, "send cron")
    assert run.parent.span_id == operator.get_span_context().span_id
    assert carried_ids(inspector.get_task("cron", task_id).headers) == ids_of(run)


def wire_message(r, queue: str, task_id: str) -> WireTask:
    return WireTask.decode(r.hget(AsynqQueueKeys(queue).task(task_id), "msg"))


def test_asynq_producers_carry_the_context_in_asynqs_headers(spans, r, redis_url):
    with tracing.tracer().start_as_current_span("request") as request:
        with AsynqClient(redis_url) as client:
            blocking = client.enqueue("resize", b"x", queue="media", headers={"mine": "kept"})

        async def produce():
            async with AsyncAsynqClient(redis_url) as client:
                return await client.enqueue("resize", b"y", queue="media")

        awaited = asyncio.run(produce())

    sends = finished(spans, "send media")
    assert len(sends) == 2 and all(s.parent.span_id == request.get_span_context().span_id for s in sends)
    first, second = (wire_message(r, "media", info.id).headers for info in (blocking, awaited))
    assert carried_ids(first) == ids_of(sends[0]) and first["mine"] == "kept"
    assert carried_ids(second) == ids_of(sends[1])


@pytest.mark.parametrize("forwarded", [True, False])
def test_an_asynq_task_outside_a_span_is_written_as_before(spans, r, redis_url, forwarded):
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} if forwarded else None
    with AsynqClient(redis_url) as client:
        info = client.enqueue("resize", b"x", headers=headers)
    assert wire_message(r, "default", info.id).headers == (headers or {})
    assert spans.get_finished_spans() == ()
