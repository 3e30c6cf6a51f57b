"""The commands a transition script runs inside Redis on the worker's and the producer's hot path, watched with
MONITOR (which names each command a script runs, with ``lua`` as its client). Each redis.call costs a script more
than the command it runs, so the hot path reads nothing it can learn from a call it makes anyway: an enqueue or a
lease reads whether an exporter is attached in the EXISTS it makes for itself, and a lease of an empty queue stops
at that EXISTS. The state tables (test_scripts_*.py) check what the same calls write."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine import Client
from taskq.queues.engine.broker import functions
from taskq.queues.engine.transitions import FetchNext

from .task_state import Q, fake_clock


def script_commands(r: redis.Redis, action: Callable[[], Any]) -> list[list[str]]:
    """The commands scripts ran on ``r``'s database while ``action()`` ran, in order (the command's name upper-case,
    then its arguments)."""
    db = r.connection_pool.connection_kwargs.get("db", 0)
    end = f"end-{uuid.uuid4().hex}"
    seen: list[list[str]] = []
    with r.monitor() as monitor:
        action()
        r.echo(end)
        for line in monitor.listen():
            words = line["command"].split(" ")
            if words[0] == "ECHO" and end in line["command"]:
                break
            if line.get("client_type") == "lua" and int(line["db"]) == db:
                seen.append([words[0].upper(), *(w.strip('"') for w in words[1:])])
    return seen


@pytest.fixture(params=["fcall", "evalsha"])
def client(request: pytest.FixtureRequest, redis_url: str, redis_client: redis.Redis) -> Iterator[Client]:
    client = Client(redis_url, clock=fake_clock())
    if request.param == "evalsha":
        functions.use_evalsha(client.broker.conn)
    yield client
    client.close()


def named(commands: list[list[str]], name: str) -> list[list[str]]:
    return [c for c in commands if c[0] == name]


def test_a_lease_of_an_empty_queue_pops_nothing(client: Client, redis_client: redis.Redis) -> None:
    broker, ops = client.broker, client.broker.transitions
    seen = script_commands(redis_client, lambda: broker.run(ops.dequeue("default", 1, 30, "w1", "tok-")))
    assert named(seen, "RPOP") == []
    assert [c[0] for c in seen] == ["EXISTS"]  # paused?, pending?, and the exporter, in one call


def test_an_ack_that_fetches_on_an_empty_queue_pops_nothing(client: Client, redis_client: redis.Redis) -> None:
    client.enqueue("email", b"{}", queue="default")
    broker, ops = client.broker, client.broker.transitions
    (leased,) = broker.run(ops.dequeue("default", 1, 30, "w1", "tok-"))
    seen = script_commands(
        redis_client,
        lambda: broker.run(ops.done("default", [(leased.id, leased.token)], "w1", then=FetchNext(1, 30, "next-"))),
    )
    assert named(seen, "RPOP") == []
    assert redis_client.llen(Q.pending) == 0 and redis_client.zcard(Q.lease) == 0


def test_a_lease_reads_the_exporter_only_where_one_is_attached(client: Client, redis_client: redis.Redis) -> None:
    broker, ops = client.broker, client.broker.transitions
    for _ in range(2):
        client.enqueue("email", b"{}", queue="default")
    seen = script_commands(redis_client, lambda: broker.run(ops.dequeue("default", 1, 30, "w1", "a-")))
    assert named(seen, "HMGET") == [[*named(seen, "HMGET")[0][:2], "type", "msg", "payload", "retried", "since"]]
    assert named(seen, "RPOP") and named(seen, "XADD")[0][2] == "MAXLEN"
    redis_client.hset(Q.event_offset, mapping={"committed": "0-1", "cap": 0})
    seen = script_commands(redis_client, lambda: broker.run(ops.dequeue("default", 1, 30, "w1", "b-")))
    assert [c[1] for c in named(seen, "HMGET")][-1] == Q.event_offset
    assert named(seen, "XADD")[0][2] == "MINID"


def test_an_enqueue_reads_the_exporter_only_where_one_is_attached(client: Client, redis_client: redis.Redis) -> None:
    client.enqueue("email", b"{}", queue="default")  # the queue exists: its stream too
    seen = script_commands(redis_client, lambda: client.enqueue("email", b"{}", queue="default"))
    assert named(seen, "HMGET") == []
    assert named(seen, "EXISTS") == [["EXISTS", Q.events, Q.events, Q.event_offset]]
    assert named(seen, "XADD")[0][2] == "MAXLEN"
    redis_client.hset(Q.event_offset, mapping={"committed": "0-1", "cap": 0})
    seen = script_commands(redis_client, lambda: client.enqueue("email", b"{}", queue="default"))
    assert [c[1] for c in named(seen, "HMGET")] == [Q.event_offset]
    assert named(seen, "XADD")[0][2] == "MINID"
