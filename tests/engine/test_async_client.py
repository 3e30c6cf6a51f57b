"""AsyncClient: the same producer API on an event loop. Each test runs one loop with asyncio.run."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest

from taskq.queues.engine import AsyncClient, BulkEnqueueError, FakeClock, coalescing
from taskq.queues.engine.broker import functions
from taskq.queues.engine.errors import (
    DuplicateTaskError,
    RedisUnavailableError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.scripts import script
from taskq.queues.engine.transitions import BULK_CHUNK

from .dbstate import ZSet, dump
from .script_runs import finishing_worker
from .task_state import NOW, NOW_MS, Q
from .test_client import INVALID


def run(redis_url: str, body):
    """Run ``body(client)`` on a fresh loop with a client on the test database and the fake clock."""

    async def main():
        async with AsyncClient(redis_url, clock=FakeClock(NOW)) as client:
            return await body(client)

    return asyncio.run(main())


@pytest.mark.parametrize(("task_type", "payload", "options"), INVALID)
def test_invalid_enqueue_writes_nothing(r, redis_url, task_type, payload, options):
    async def body(client):
        with pytest.raises(ValidationError):
            await client.enqueue(task_type, payload, **options)
        with pytest.raises(ValidationError, match="item 0"):
            await client.enqueue_many([{"type": task_type, "payload": payload, **options}])

    run(redis_url, body)
    assert dump(r) == {}


def test_enqueue_pending_and_scheduled(r, redis_url):
    async def body(client):
        return (
            await client.enqueue("email", b"raw"),
            await client.enqueue("email", {"a": 1}, process_at=datetime.fromtimestamp(NOW + 60, UTC)),
        )

    now, later = run(redis_url, body)
    assert (now.state, later.state) == ("pending", "scheduled")
    assert r.lrange(Q.pending, 0, -1) == [now.id.encode()]
    assert r.hget(Q.task(now.id), "payload") == b"raw"
    assert r.hget(Q.task(later.id), "payload") == b'{"a":1}'
    assert dump(r)[Q.scheduled] == ZSet({later.id: NOW_MS + 60_000})


def test_duplicate_and_conflict(r, redis_url):
    async def body(client):
        await client.enqueue("email", {"to": "ada"}, unique=60, task_id="t1")
        before = dump(r)
        with pytest.raises(DuplicateTaskError, match='"email"'):
            await client.enqueue("email", {"to": "ada"}, unique=60)
        with pytest.raises(TaskIdConflictError, match="t1"):
            await client.enqueue("sms", {}, task_id="t1")
        assert dump(r) == before

    run(redis_url, body)


def test_enqueue_many_chunks_queues_and_later_duplicate(r, redis_url):
    items = [("n", {"i": i}) for i in range(2 * BULK_CHUNK + 10)]  # three chunks, sent without waiting
    items[3] = {"type": "u", "payload": {}, "unique": 60}
    items[BULK_CHUNK + 5] = {"type": "u", "payload": {}, "unique": 60}

    async def body(client):
        infos = await client.enqueue_many([("n", {"i": i}) for i in range(2500)])
        assert [i.json()["i"] for i in infos] == list(range(2500))
        mixed = await client.enqueue_many([("a", 0), {"type": "b", "payload": 1, "queue": "critical"}, ("c", 2)])
        assert [(i.type, i.queue) for i in mixed] == [("a", "default"), ("b", "critical"), ("c", "default")]
        r.flushdb()
        with pytest.raises(DuplicateTaskError) as refused:
            await client.enqueue_many(items)
        return refused.value

    error = run(redis_url, body)
    # Built once from the script's refusal: both errors, the refused task named, its place in its chunk kept.
    assert isinstance(error, BulkEnqueueError) and error.position == 5 and '"u"' in error.message
    enqueued = error.enqueued
    # The first chunk went in; the second, refused for its duplicate, wrote nothing, nor did the third behind it.
    assert len(enqueued) == BULK_CHUNK
    assert {i.id.encode() for i in enqueued} == set(r.lrange(Q.pending, 0, -1))
    assert r.xlen(Q.events) == BULK_CHUNK


def _signal_on_xread(client: AsyncClient) -> threading.Event:
    reached = threading.Event()
    execute = client.broker.execute

    async def spying(op, request, replicated=False):
        if getattr(request, "name", None) == "xread":
            reached.set()
        return await execute(op, request, replicated)

    client.broker.execute = spying  # type: ignore[method-assign]
    return reached


@pytest.mark.parametrize("retention", [3600, None])
def test_wait_completed(r, redis_url, retention):
    def finish(broker, leased):
        t = broker.transitions
        if retention:
            broker.run(t.write_result("default", leased.id, leased.token, "result", b'"fine"'))
            broker.run(t.complete("default", [(leased.id, leased.token, retention)], "w1"))
        else:
            broker.run(t.done("default", [(leased.id, leased.token)], "w1"))

    async def body(client):
        info = await client.enqueue("email", {"to": "ada"}, retention=retention)
        thread = finishing_worker(redis_url, "default", finish, _signal_on_xread(client))
        done = await client.wait(info.id, timeout=30)
        thread.join(30)
        return info, done

    info, done = run(redis_url, body)
    assert (done.id, done.state, done.json()) == (info.id, "completed", {"to": "ada"})
    assert done.result == (b'"fine"' if retention else None)


def test_wait_timeout_and_unknown(r, redis_url):
    async def body(client):
        info = await client.enqueue("email", {})
        with pytest.raises(TimeoutError):
            await client.wait(info.id, timeout=0.05)
        with pytest.raises(TaskNotFoundError):
            await client.wait("nope", timeout=5)

    run(redis_url, body)


def test_unreachable_redis():
    async def main():
        async with AsyncClient("redis://127.0.0.1:1/0") as down:
            with pytest.raises(RedisUnavailableError):
                await down.enqueue("email", {})
            with pytest.raises(RedisUnavailableError):
                await down.wait("x", timeout=1)

    asyncio.run(main())


def test_noscript_recovery(r, redis_url):
    async def body(client):
        functions.use_evalsha(client.broker.conn)  # scripts, not functions: those are what NOSCRIPT concerns
        await client.enqueue("email", {})
        r.script_flush()
        await client.enqueue("email", {})

    run(redis_url, body)
    assert r.script_exists(script("enqueue").sha) == [True]
    assert r.llen(Q.pending) == 2


def test_fresh_policies_are_taken_from_memory_without_a_flow(r, redis_url):
    """The cached-policy shortcut of the blocking client: while the policies are fresh, an enqueue drives no flow
    for them."""
    driven: list[str] = []

    async def main():
        async with AsyncClient(redis_url, clock=FakeClock(NOW), policy_refresh=3600) as client:
            drive = client.broker.drive

            async def recording(op, flow, replicated=False):
                driven.append(op)
                return await drive(op, flow, replicated)

            client.broker.drive = recording  # type: ignore[method-assign]
            for n in range(3):
                await client.enqueue("email", {"n": n})

    asyncio.run(main())
    assert driven.count("client.policies") == 1  # the first enqueue reads them; the next two find them fresh
    assert r.llen(Q.pending) == 3


def test_a_task_enqueued_alone_takes_the_one_task_path(r, redis_url, monkeypatch):
    """A caller alone writes its task at once, without a round around it (as the blocking client does): the
    round's flow is never entered."""

    def no_round(*args, **kwargs):
        raise AssertionError("a caller alone went through a round")

    monkeypatch.setattr(coalescing, "group_flow", no_round)

    async def body(client):
        first = await client.enqueue("email", {}, task_id="one")
        with pytest.raises(TaskIdConflictError, match='task id "one" already exists'):
            await client.enqueue("email", {}, task_id="one")
        return first

    assert run(redis_url, body).id == "one"
    assert r.lrange(Q.pending, 0, -1) == [b"one"]
