"""The engine's stream-reading API (taskq.queues.engine.events), blocking flavour, against a real Redis."""

from __future__ import annotations

import asyncio

import pytest

from taskq.queues.engine import Client, FakeClock, ValidationError
from taskq.queues.engine.broker import AsyncBroker, Broker
from taskq.queues.engine.events import (
    QUEUE_REFRESH_SECONDS,
    START,
    AsyncEventStreams,
    EventStreams,
    later,
    parse_entry,
    stream_id_key,
)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def streams(redis_client, redis_url):
    s = EventStreams(redis_url, clock=FakeClock())
    yield s
    s.close()


def test_tail_starts_at_the_end_and_follows_new_queues_from_its_start(streams, moves):
    moves.enqueue("old")  # history: not news to a tail started afterwards
    tail = streams.tail()
    assert streams.read(tail, block_ms=1) == []
    fresh = moves.enqueue("old")[0]
    events = streams.read(tail, block_ms=1)
    assert [(e.queue, e.task_id, e.from_state, e.to_state) for e in events] == [("old", fresh, "", "pending")]
    born = moves.enqueue("new")[0]  # a queue created after the tail started
    streams.clock.advance(QUEUE_REFRESH_SECONDS)
    events = streams.read(tail, block_ms=1)
    assert [(e.queue, e.task_id) for e in events] == [("new", born)]
    assert tail.cursor()["new"] == events[0].event_id


def test_tail_reads_in_batches_and_loses_nothing(streams, moves):
    tail = streams.tail(count=100)
    streams.read(tail, block_ms=1)
    moves.enqueue("q")  # creates the queue
    streams.clock.advance(QUEUE_REFRESH_SECONDS)
    moves.enqueue("q", n=250)
    seen = []
    while len(seen) < 251:
        batch = streams.read(tail, block_ms=100)
        assert len(batch) <= 100
        seen += batch
    assert len({e.event_id for e in seen}) == 251


def test_replay_is_exclusive_bounded_and_filters_one_task(streams, moves):
    first = moves.enqueue("q")[0]
    start = streams.cursor(["q"])["q"]
    ids = moves.enqueue("q", n=5)
    replay = streams.replay("q", start)
    assert [e.task_id for e in replay.events] == ids and replay.complete
    assert replay.last_id == replay.events[-1].event_id
    short = streams.replay("q", start, limit=3)
    assert [e.task_id for e in short.events] == ids[:3] and not short.complete
    assert [e.task_id for e in streams.replay("q", "0-0", task_id=first).events] == [first]
    assert streams.replay("q", replay.last_id).events == []


def test_cursor_and_counts(streams, moves):
    assert streams.cursor(["nothing"]) == {"nothing": "0-0"}
    moves.enqueue("q", n=3, retention=60)
    moves.complete("q", moves.start("q", k=1))
    counts = streams.counts(["q", "nothing"])
    assert counts["q"]["pending"] == 2 and counts["q"]["completed"] == 1 and counts["q"]["size"] == 2
    assert counts["nothing"]["size"] == 0


def test_counts_are_the_figures_a_fresh_page_reads(moves, redis_url):
    """Issue 16: live pages showed sizes without aggregating and waiting tasks, and never the totals."""
    from taskq.queues.engine import Inspector

    ids = moves.enqueue("q", n=3, retention=60)
    moves.complete("q", moves.start("q", k=1))
    moves.enqueue("q", group="batch")  # aggregating
    moves.enqueue("q", after=[ids[2]])  # waiting for a pending task
    streams = EventStreams(redis_url)  # on the real clock, as the inspector: today is the same day
    counts = streams.counts(["q"])["q"]
    streams.close()
    with Inspector(redis_url) as inspector:
        assert counts == inspector.queue_info("q").live_counts()
    assert (counts["aggregating"], counts["waiting"], counts["size"]) == (1, 1, 4)
    assert (counts["processed_today"], counts["processed_total"], counts["failed_total"]) == (1, 1, 0)


def test_stream_ids_and_bad_entries():
    assert stream_id_key("17-3") < stream_id_key("17-10") < stream_id_key("18-0")
    assert stream_id_key("junk") < stream_id_key("0-0")
    assert later("17-10", "17-9") == "17-10"
    event = parse_entry("q", b"1-0", {b"id": b"t", b"at": b"x", b"to": b"\xff"})
    assert (event.task_id, event.at_ms, event.to_state, event.from_state) == ("t", 0, "\ufffd", "")


# -- the broker the reads go through --------------------------------------------------------------------------------


def test_streams_read_through_the_broker_they_are_given_under_its_prefix(redis_url):
    client = Client(redis_url, prefix="evb")
    broker = Broker(redis_url, prefix="evb")
    try:
        client.enqueue("email", {}, queue="evq")
        given = EventStreams(broker=broker)
        assert given.broker is broker and given.keys.prefix == "evb"
        assert given.cursor(["evq"])["evq"] != START
        assert EventStreams(redis_url).cursor(["evq"]) == {"evq": START}  # a broker of its own, the default prefix
    finally:
        client.close()
        broker.close()


def test_a_prefix_other_than_the_given_brokers_is_refused(redis_url):
    broker = Broker(redis_url, prefix="evb")
    try:
        with pytest.raises(ValidationError, match="differs from the given broker's"):
            EventStreams(prefix="elsewhere", broker=broker)
        with pytest.raises(ValidationError, match="differs from the given broker's"):
            AsyncEventStreams(prefix="elsewhere", broker=AsyncBroker(redis_url, prefix="evb"))
        assert EventStreams(prefix="evb", broker=broker).keys.prefix == "evb"
    finally:
        broker.close()


def test_async_streams_read_through_the_async_broker_they_are_given(redis_url):
    client = Client(redis_url, prefix="evb")

    async def read() -> dict[str, str]:
        broker = AsyncBroker(redis_url, prefix="evb")
        try:
            return await AsyncEventStreams(broker=broker).cursor(["evq", "none"])
        finally:
            await broker.close()

    try:
        client.enqueue("email", {}, queue="evq")
        cursor = asyncio.run(read())
        assert cursor["evq"] != START and cursor["none"] == START
    finally:
        client.close()
