"""The asyncio client has the workflow surface of the blocking one: groups, dependencies, submit, wait_workflow
(the same flows run underneath, so these check the wiring, not the semantics again)."""

from __future__ import annotations

import asyncio

from taskq.queues.engine import AsyncClient, Client, Inspector, chain, sig


def test_async_client_groups_dependencies_and_workflows(r, redis_url):
    async def scenario():
        async with AsyncClient(redis_url) as client:
            grouped = await client.enqueue("email:line", {"n": 1}, group="user:42")
            first = await client.enqueue("a", b"")
            second = await client.enqueue("b", b"", after=[first.id])
            flow = await client.submit(chain(sig("step1", b"1"), sig("step2", b"2")))
            return grouped, second, flow

    grouped, second, flow = asyncio.run(scenario())
    inspector = Inspector(redis_url)
    assert inspector.get_task("default", grouped.id).state == "aggregating"
    assert inspector.get_task("default", second.id).state == "waiting"
    assert [m.type for m in inspector.workflow("default", flow.id).members] == ["step1", "step2"]
    assert flow.state == "running"

    # Finish both steps with the broker, then the async wait sees the workflow succeed.
    broker = Client(redis_url).broker
    for _ in range(2):
        leased = broker.run(broker.transitions.dequeue("default", 10, 30, "w", "t:"))
        step = next(t for t in leased if t.type.startswith(b"step"))
        broker.run(broker.transitions.done("default", [(step.id, step.token)], "w"))

    async def wait():
        async with AsyncClient(redis_url) as client:
            return await client.wait_workflow(flow.id, timeout=10)

    assert asyncio.run(wait()).state == "succeeded"
