"""The worker's pub/sub through its store (``WorkerStore.subscribe``, on the broker's subscription), against a real
Redis: it hears cancellations and its control channel on the database the broker selects, and the wake-ups of the
queues it serves, following a change of that set."""

from __future__ import annotations

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.worker_store import WorkerStore


def confirmed(pubsub, kind: str, channel: str) -> None:
    """Read up to Redis's confirmation of a (un)subscription: from then on, what is published reaches us."""
    while True:
        message = pubsub.get_message(timeout=10.0)
        assert message is not None, f"no {kind} confirmation for {channel}"
        if message["type"] == kind and message["channel"] == channel.encode():
            return


def heard_until(pubsub, last: bytes) -> list[tuple[bytes, bytes]]:
    """``(channel, data)`` of every message up to the one whose data is ``last``; None within 10 s ends the read."""
    heard = []
    while True:
        message = pubsub.get_message(timeout=10.0)
        assert message is not None, f"{last!r} never arrived; heard {heard}"
        if message["type"] in ("message", "pmessage"):
            heard.append((message["channel"], message["data"]))
            if message["data"] == last:
                return heard


def test_the_worker_hears_its_channels_on_the_brokers_database_and_follows_the_queue_set(redis_url, redis_client):
    broker = Broker(redis_url)
    store = WorkerStore(broker)
    db = int(redis_url.rsplit("/", 1)[1])
    pubsub, cancel, control = store.subscribe(["a"], server_id="s1")
    try:
        assert store.database() == db
        assert (cancel, control) == (store.keys.cancel_channel(db), store.keys.control_channel("s1", db))
        a, b = store.keys.queue("a").pending, store.keys.queue("b").pending
        store.resubscribe(pubsub, ["b"], ["a"])
        confirmed(pubsub, "unsubscribe", a)  # sent after the subscription to b: both are in place
        for channel in (a, b, control, cancel):
            redis_client.publish(channel, channel)
        heard = heard_until(pubsub, cancel.encode())
        assert heard == [(b.encode(), b.encode()), (control.encode(), control.encode()), (cancel.encode(),) * 2]
    finally:
        pubsub.close()
        broker.close()
