"""The connection a blocking ``Client`` keeps for its enqueue rounds (``broker.pipelining.KeptConnection``): one by one
enqueues go on it without a checkout from the pool, and it stays as safe as a pooled one: closed by the server,
interrupted with a reply unread, or inherited by a forked child, the next enqueue still gets its own answer."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from taskq.queues.engine import Client, DuplicateTaskError, FakeClock, Keys, producer_flows

Q = Keys().queue("default")


@pytest.fixture
def client(r: redis.Redis, redis_url: str, clock: FakeClock) -> Iterator[Client]:
    with Client(redis_url, clock=clock, policies=False) as c:  # no policy reads: only the writes use Redis
        yield c


def kept_client_id(client: Client) -> int:
    connection = client.broker._kept.get()
    connection.send_command("CLIENT", "ID")
    return int(connection.read_response())


def test_one_by_one_enqueues_go_on_one_kept_connection(client: Client, r: redis.Redis, monkeypatch):
    client.enqueue("email", {"n": 0})  # the first checks the key layout, through the pool
    first = kept_client_id(client)
    checkouts: list[object] = []
    pool = client.broker.conn.connection_pool
    take = pool.get_connection
    monkeypatch.setattr(pool, "get_connection", lambda *a, **k: checkouts.append(1) or take(*a, **k))
    for n in range(1, 6):
        client.enqueue("email", {"n": n})
    assert checkouts == [] and kept_client_id(client) == first
    assert r.llen(Q.pending) == 6


def test_a_kept_connection_the_server_closed_is_opened_again(client: Client, r: redis.Redis):
    client.enqueue("email", {"n": 0})
    before = kept_client_id(client)
    r.client_kill_filter(_id=before)  # as a Redis restart or its idle timeout would
    info = client.enqueue("email", {"n": 1})
    assert r.hget(Q.task(info.id), "type") == b"email"
    assert kept_client_id(client) != before


@pytest.mark.parametrize("warm", [True, False], ids=["kept connection", "pooled connection"])
def test_an_enqueue_interrupted_before_its_reply_leaves_no_reply_for_the_next(
    client: Client, r: redis.Redis, monkeypatch, warm: bool
):
    """The script ran but its reply was never read: the next call must not take that reply ("OK") for its own.
    A client's first call goes on a pooled connection (it checks the key layout first), the others on the kept
    one."""
    if warm:
        client.enqueue("email")
    info_of = producer_flows.info_of

    def interrupted(*args: object) -> object:
        monkeypatch.setattr(producer_flows, "info_of", info_of)
        raise KeyboardInterrupt

    monkeypatch.setattr(producer_flows, "info_of", interrupted)  # runs while Redis runs the script
    with pytest.raises(KeyboardInterrupt):
        client.enqueue("report", {"day": 1}, unique=60)
    with pytest.raises(DuplicateTaskError):  # its own reply: the lock the interrupted call took
        client.enqueue("report", {"day": 1}, unique=60)
    assert r.llen(Q.pending) == 1 + warm


def test_a_forked_child_enqueues_on_its_own_connection(client: Client, r: redis.Redis):
    client.enqueue("email", {"from": "parent"})
    pid = os.fork()
    if pid == 0:  # the child: any failure is its exit code
        try:
            client.enqueue("email", {"from": "child"})
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    client.enqueue("email", {"from": "parent again"})  # the parent's connection was left alone
    assert r.llen(Q.pending) == 3
