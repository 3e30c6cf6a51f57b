"""Concurrent ``Client.enqueue`` calls share script calls (queues/engine/coalescing.py), and each still gets its own
TaskInfo or its own error. The first call's write is held at a gate, so that the others queue up behind it and
go in one round: no timing, on the real Redis."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

from taskq.queues.engine import Client, DuplicateTaskError, Keys, RedisUnavailableError, TaskIdConflictError, coalescing
from taskq.queues.engine.coalescing import AsyncEnqueueCoalescer, _Waiting
from taskq.queues.engine.producer_flows import write_flow
from tests.waiting import wait_for


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock) -> Any:
    with Client(redis_url, clock=clock) as c:
        yield c


class Gate:
    """Holds the first round at the gate and records every round's task types (and queues): it wraps the flow the
    coalescer writes each queue of a round with (``producer_flows.write_flow``)."""

    def __init__(self, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
        self.client = client
        self.opened = threading.Event()
        self.rounds: list[list[tuple[str, str]]] = []
        monkeypatch.setattr(coalescing, "write_flow", self.write)

    def write(self, transitions: Any, placements: list[Any], now_ms: int) -> Any:
        self.rounds.append([(p.message.queue, p.message.type) for p in placements])
        if len(self.rounds) == 1:
            assert self.opened.wait(10)
        return write_flow(transitions, placements, now_ms)


def concurrently(calls: list[Callable[[], Any]], gate: Gate) -> list[Any]:
    """Run the first call (held at the gate), then the others, which queue up behind it; then open the gate.
    Returns each call's result or the exception it raised, in order."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:  # the test looks at it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    threads[0].start()
    wait_for(lambda: gate.rounds, what="the first round at the gate")
    for t in threads[1:]:
        t.start()
    wait_for(lambda: len(gate.client._coalescer._waiting) == len(calls) - 1, what="the others waiting")
    gate.opened.set()
    for t in threads:
        t.join(10)
    return results


def test_calls_waiting_behind_a_round_go_in_the_next_one(client: Client, r: redis.Redis, monkeypatch):
    gate = Gate(client, monkeypatch)
    calls = [lambda i=i: client.enqueue(f"t{i}", {"n": i}) for i in range(20)]
    infos = concurrently(calls, gate)
    assert gate.rounds[0] == [("default", "t0")]
    assert len(gate.rounds) == 2 and sorted(gate.rounds[1]) == sorted(("default", f"t{i}") for i in range(1, 20))
    assert [info.type for info in infos] == [f"t{i}" for i in range(20)]
    assert len({info.id for info in infos}) == 20
    assert r.llen(Keys().queue("default").pending) == 20
    for info in infos:
        assert r.hget(Keys().queue("default").task(info.id), "type") == info.type.encode()


def test_a_refused_call_gets_its_own_error_and_the_others_are_written(client: Client, r: redis.Redis, monkeypatch):
    taken = client.enqueue("held", {"k": 1}, unique=60)
    existing = client.enqueue("x", task_id="fixed-id")
    gate = Gate(client, monkeypatch)
    calls = [
        lambda: client.enqueue("a"),
        lambda: client.enqueue("b"),
        lambda: client.enqueue("held", {"k": 1}, unique=60),  # its lock is held by ``taken``
        lambda: client.enqueue("c"),
        lambda: client.enqueue("y", task_id="fixed-id"),  # the id is taken
        lambda: client.enqueue("d"),
    ]
    results = concurrently(calls, gate)
    assert isinstance(results[2], DuplicateTaskError) and '"held"' in results[2].message
    assert isinstance(results[4], TaskIdConflictError) and '"fixed-id"' in results[4].message
    written = [results[i] for i in (0, 1, 3, 5)]
    assert [info.type for info in written] == ["a", "b", "c", "d"]
    q = Keys().queue("default")
    assert r.llen(q.pending) == 2 + 4  # taken, existing, and the four
    assert r.hget(q.task("fixed-id"), "type") == b"x"
    assert r.hget(q.task(existing.id), "type") == b"x"
    assert taken.id != results[0].id
    # the round was sent three times: with all five, without the duplicate, without the conflict too
    assert [len(x) for x in gate.rounds] == [1, 5, 4, 3]


def test_two_callers_of_one_unique_task_in_one_round_one_wins(client: Client, r: redis.Redis, monkeypatch):
    gate = Gate(client, monkeypatch)
    calls = [lambda: client.enqueue("first")] + [lambda: client.enqueue("report", {"day": 1}, unique=60)] * 2
    results = concurrently(calls, gate)
    wins = [x for x in results[1:] if not isinstance(x, Exception)]
    losses = [x for x in results[1:] if isinstance(x, DuplicateTaskError)]
    assert len(wins) == 1 and len(losses) == 1
    assert r.llen(Keys().queue("default").pending) == 2


def test_one_round_writes_each_queue_in_its_own_script_call(client: Client, r: redis.Redis, monkeypatch):
    gate = Gate(client, monkeypatch)
    calls = [lambda: client.enqueue("first")] + [lambda q=q: client.enqueue("t", queue=q) for q in ("a", "b", "a")]
    infos = concurrently(calls, gate)
    assert [info.queue for info in infos] == ["default", "a", "b", "a"]
    assert sorted(gate.rounds[1:]) == [[("a", "t"), ("a", "t")], [("b", "t")]]
    assert r.llen(Keys().queue("a").pending) == 2 and r.llen(Keys().queue("b").pending) == 1


def test_when_redis_is_away_every_caller_of_the_round_gets_its_own_error(client: Client, r: redis.Redis, monkeypatch):
    gate = Gate(client, monkeypatch)
    down = Client("redis://127.0.0.1:1/3")  # nothing listens on port 1: refused at once
    down._layout_checked = True  # straight to the write
    calls = [lambda: client.enqueue("first")] + [lambda: client.enqueue("t")] * 3

    # The first round goes to the real Redis; the rounds after it, to the one that is away.
    send = client._coalescer._send
    client._coalescer._send = lambda request: (send if len(gate.rounds) == 1 else down._coalescer._send)(request)
    results = concurrently(calls, gate)
    errors = results[1:]
    assert all(isinstance(e, RedisUnavailableError) for e in errors)
    assert len({id(e) for e in errors}) == 3  # one object each, not one shared across threads
    assert r.llen(Keys().queue("default").pending) == 1
    down.close()


def hold_first_round(
    coalescer: AsyncEnqueueCoalescer, rounds: list[list[str]], opened: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Record each round's task types, and hold the first round's requests until ``opened`` is set."""
    execute = coalescer._send

    def recorded(transitions: Any, placements: list[Any], now_ms: int) -> Any:
        rounds.append([p.message.type for p in placements])
        return write_flow(transitions, placements, now_ms)

    async def gated(request: Any) -> Any:
        if len(rounds) == 1:
            await opened.wait()
        return await execute(request)

    monkeypatch.setattr(coalescing, "write_flow", recorded)
    coalescer._send = gated  # type: ignore[method-assign]


def test_async_client_tasks_share_rounds_and_keep_their_own_errors(redis_url: str, r: redis.Redis, clock, monkeypatch):
    """The same on an AsyncClient: tasks of one loop waiting behind a round go together in the next one, and a
    refused one gets its own error."""
    from taskq.queues.engine import AsyncClient

    async def main() -> tuple[list[list[str]], list[Any]]:
        async with AsyncClient(redis_url, clock=clock) as client:
            await client.enqueue("held", {"k": 1}, unique=60)
            opened = asyncio.Event()
            rounds: list[list[str]] = []
            hold_first_round(client._coalescer, rounds, opened, monkeypatch)
            first = asyncio.create_task(client.enqueue("first"))
            while not rounds:
                await asyncio.sleep(0)
            others = [asyncio.create_task(client.enqueue(f"t{i}")) for i in range(5)]
            refused = asyncio.create_task(client.enqueue("held", {"k": 1}, unique=60))
            while len(client._coalescer._waiting) < 6:
                await asyncio.sleep(0)
            opened.set()
            results = await asyncio.gather(first, *others, refused, return_exceptions=True)
            return rounds, results

    rounds, results = asyncio.run(main())
    assert rounds[0] == ["first"]
    assert sorted(rounds[1]) == sorted(["held"] + [f"t{i}" for i in range(5)])
    assert sorted(rounds[2]) == [f"t{i}" for i in range(5)]  # sent again without the refused one
    assert len(rounds) == 3
    assert [x.type for x in results[:6]] == ["first"] + [f"t{i}" for i in range(5)]
    assert isinstance(results[6], DuplicateTaskError)
    assert r.llen(Keys().queue("default").pending) == 7


def test_a_cancelled_waiting_task_is_not_written(redis_url: str, r: redis.Redis, clock, monkeypatch):
    """asyncio: a task cancelled while it waits for a round leaves the queue of calls; the round goes on without
    it."""
    from taskq.queues.engine import AsyncClient

    async def main() -> tuple[list[list[str]], Any]:
        async with AsyncClient(redis_url, clock=clock) as client:
            coalescer = client._coalescer
            opened = asyncio.Event()
            rounds: list[list[str]] = []
            hold_first_round(coalescer, rounds, opened, monkeypatch)
            first = asyncio.create_task(client.enqueue("first"))
            while not rounds:
                await asyncio.sleep(0)
            gone = asyncio.create_task(client.enqueue("gone"))
            last = asyncio.create_task(client.enqueue("last"))
            while len(coalescer._waiting) < 2:
                await asyncio.sleep(0)
            gone.cancel()
            await asyncio.gather(gone, return_exceptions=True)
            opened.set()
            return rounds, await asyncio.gather(first, last)

    rounds, infos = asyncio.run(main())
    assert rounds == [["first"], ["last"]]
    assert [i.type for i in infos] == ["first", "last"]
    assert r.llen(Keys().queue("default").pending) == 2


def test_a_caller_that_gives_up_after_being_handed_the_round_passes_it_on():
    """The hand-over itself: the next round was handed to a caller that then left (its task cancelled before it
    woke): the next waiting caller is handed the round instead; with none left, nobody is writing."""
    woken: list[str] = []
    coalescer = AsyncEnqueueCoalescer(None)  # type: ignore[arg-type]
    handed = _Waiting(None, lambda: woken.append("handed"))  # type: ignore[arg-type]
    behind = _Waiting(None, lambda: woken.append("behind"))  # type: ignore[arg-type]
    coalescer._writing, coalescer._waiting = True, [handed, behind]
    handed.writes = True
    coalescer._abandon(handed)
    assert coalescer._waiting == [behind] and behind.writes and woken == ["behind"] and coalescer._writing
    coalescer._abandon(behind)
    assert coalescer._waiting == [] and not coalescer._writing and woken == ["behind"]
