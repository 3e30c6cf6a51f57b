"""The wake-ups of a process's long polls on one subscription (``queues/engine/wakeups.py``), against real Redis:
a push wakes the waits on its queue and no other, a new subscription wakes every wait (pushes before it went
unheard), many waits share one connection, and the thread leaves once nothing waits."""

from __future__ import annotations

import os
from contextlib import ExitStack

import redis

from taskq.queues.engine import wakeups
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.wakeups import WakeUps, glob_escape

WAIT = 30.0  # seconds an event may take to be set: a bound on a busy machine, never reached when all is well


def channel_names() -> tuple[str, str, str]:
    """A prefix of its own (other suites on the same server publish on their own queues' channels)."""
    prefix = f"tw{os.urandom(4).hex()}*"  # a glob character in the prefix is matched literally
    return glob_escape(prefix) + ":{*}:pending", f"{prefix}:{{a}}:pending", f"{prefix}:{{b}}:pending"


def test_a_push_wakes_the_waits_on_its_queue_only(redis_client):
    pattern, a, b = channel_names()
    hub = WakeUps(Broker(conn=redis_client), pattern)
    try:
        with hub.watching([a]) as on_a, hub.watching([b]) as on_b:
            # The subscription, once made, wakes every wait: what was pushed before it was not heard.
            assert on_a.wait(WAIT) and on_b.wait(WAIT)
            on_a.clear()
            on_b.clear()
            redis_client.publish(a.replace("{a}", "{elsewhere}"), "")
            redis_client.publish(b, "")
            assert on_b.wait(WAIT)  # heard in order: the push to another queue came before, and woke nobody
            assert not on_a.is_set()
            redis_client.publish(a, "")
            assert on_a.wait(WAIT)
    finally:
        hub.close()


def test_many_waits_share_one_connection(redis_client, redis_url):
    pattern, a, _ = channel_names()
    name = f"tw-{os.urandom(4).hex()}"
    hub = WakeUps(Broker(conn=redis.Redis.from_url(redis_url, client_name=name)), pattern)
    try:
        with ExitStack() as stack:
            events = [stack.enter_context(hub.watching([a])) for _ in range(50)]
            assert all(event.wait(WAIT) for event in events)  # subscribed
            ours = [c for c in redis_client.client_list() if c.get("name") == name]
            assert [c["psub"] for c in ours] == ["1"]
            for event in events:
                event.clear()
            redis_client.publish(a, "")
            assert all(event.wait(WAIT) for event in events)
    finally:
        hub.close()


def test_the_thread_leaves_when_nothing_waits_and_a_new_wait_starts_it_again(redis_client, monkeypatch):
    monkeypatch.setattr(wakeups, "IDLE_EXIT", 0.0)
    pattern, a, _ = channel_names()
    hub = WakeUps(Broker(conn=redis_client), pattern)
    try:
        with hub.watching([a]) as woken:
            assert woken.wait(WAIT)
            thread = hub._thread
        assert thread is not None
        thread.join(WAIT)
        assert not thread.is_alive()
        with hub.watching([a]) as woken:
            assert woken.wait(WAIT)  # a new thread, a new subscription
            redis_client.publish(a, "")
    finally:
        hub.close()
