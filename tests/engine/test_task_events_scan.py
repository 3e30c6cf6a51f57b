"""A task's history is read newest first and ends at the task's creation (the console's task page at scale)."""

from __future__ import annotations

from taskq.queues.engine import Client, Inspector


def test_history_of_a_recreated_id_starts_at_its_latest_creation(r, redis_url):
    client = Client(redis_url)
    inspector = Inspector(redis_url)
    client.enqueue("email", b"first", task_id="fixed-id")
    inspector.delete_task("default", "fixed-id")
    client.enqueue_many([("other", b"y")] * 1500)  # more than one page of the stream in between
    client.enqueue("email", b"second", task_id="fixed-id")
    events = inspector.task_events("default", "fixed-id")
    assert [(e.from_state, e.to_state) for e in events] == [("", "pending")]
    client.close()


def test_history_without_its_creation_in_the_stream_is_what_the_scan_limit_reached(r, redis_url):
    client = Client(redis_url)
    inspector = Inspector(redis_url)
    old = client.enqueue("email", b"old").id
    client.enqueue_many([("other", b"y")] * 1500)
    assert inspector.task_events("default", old, scan_limit=1000) == []  # bounded: the creation is further back
    assert [e.to_state for e in inspector.task_events("default", old)] == ["pending"]
    client.close()


def test_a_window_before_the_streams_oldest_entry_reads_nothing_and_a_window_stops_the_scan(r, redis_url):
    from taskq.queues.engine.timeline import CLOCK_SLACK_MS, event_window

    client = Client(redis_url)
    inspector = Inspector(redis_url)
    task = client.enqueue("email", b"kept")
    client.enqueue_many([("other", b"y")] * 2500)
    made = task.created_at
    window = event_window(made, made)
    assert window is not None and window[1] - window[0] == 2 * CLOCK_SLACK_MS
    assert [e.to_state for e in inspector.task_events("default", task.id, window=window)] == ["pending"]
    # The same task seen as if its life had ended long before the stream's oldest entry: nothing is read.
    long_ago = (window[0] - 10 * CLOCK_SLACK_MS, window[0] - 9 * CLOCK_SLACK_MS)
    assert inspector.task_events("default", task.id, window=long_ago) == []
    # A window after the task's creation: the scan stops at the first page of entries older than it.
    later = (window[1] + 60_000, window[1] + 120_000)
    r.xadd("tq:{default}:events", {"id": task.id, "type": "email", "from": "pending", "to": "active", "at": 0})
    assert [e.to_state for e in inspector.task_events("default", task.id, window=later)] == ["active"]
    client.close()


def _waited_behind(redis_url, clock, batches):
    """A task, then the queue's traffic since: ``batches`` of 500 other tasks, a second apart."""
    client = Client(redis_url, clock=clock)
    task = client.enqueue("email", b"waited")
    for _ in range(batches):
        clock.advance(1)
        client.enqueue_many([("other", b"y")] * 500)
    client.close()
    return task


def test_read_from_its_last_move_the_history_skips_the_traffic_after_it(r, redis_url, clock):
    task = _waited_behind(redis_url, clock, 5)  # more traffic than the scan limit below
    inspector = Inspector(redis_url)
    since = round(task.created_at.timestamp() * 1000)  # never moved: its last move is its creation
    assert inspector.task_events("default", task.id, scan_limit=1000) == []  # from the newest: the limit ends it
    events = inspector.task_events("default", task.id, scan_limit=1000, last_move=since)
    assert [(e.from_state, e.to_state, e.id) for e in events] == [("", "pending", task.id)]


def test_a_last_move_timed_by_a_clock_behind_the_others_reads_the_whole_stream_instead(r, redis_url, clock):
    task = _waited_behind(redis_url, clock, 3)
    # A worker whose clock is a minute behind moved it last: by event time, its move sorts before the traffic.
    behind = round(task.created_at.timestamp() * 1000) - 60_000
    r.xadd("tq:{default}:events", {"id": task.id, "type": "email", "from": "pending", "to": "active", "at": behind})
    events = Inspector(redis_url).task_events("default", task.id, last_move=behind)
    assert [(e.from_state, e.to_state) for e in events] == [("", "pending"), ("pending", "active")]


def _read(r):
    def read(commands):
        pipe = r.pipeline(transaction=False)
        for command in commands:
            getattr(pipe, command.name)(*command.args, **command.kwargs)
        return pipe.execute()

    return read


def test_moment_end_is_the_last_millisecond_of_entries_timed_at_or_before_the_moment(r):
    from taskq.queues.engine.inspection.event_scan import moment_end

    stream = "tq:{default}:events"
    # Stream ids a few ms apart, some sharing a millisecond; event times rising, some equal, one behind its place.
    plan = [(1000, 10), (1000, 11), (1003, 11), (1007, 20), (1008, 20), (1008, 21), (1500, 30), (1501, 29),
            (90_000, 40), (90_000, 41), (90_001, 50)]  # fmt: skip
    for n, (ms, at) in enumerate(plan):
        r.xadd(stream, {"id": f"t{n}", "at": at}, id=f"{ms}-{n}")
    read = _read(r)
    assert moment_end(read, stream, 50) is None  # the newest entry is not later: nothing to skip
    assert moment_end(read, "tq:{default}:nothing", 5) is None
    for at in range(5, 50):
        end = moment_end(read, stream, at)
        last_ms = int(end)
        # Nothing timed at or before the moment lies after the end (save one out of order by a skewed clock,
        # which the caller detects) ...
        assert all(ms <= last_ms for ms, when in plan if when <= at and (ms, when) != (1501, 29)), at
        # ... and the end is the millisecond before the first entry whose time is later: no later millisecond read.
        first_after = min(ms for ms, when in plan if ms > last_ms)
        assert [when for ms, when in plan if ms == first_after][0] > at, at
    assert moment_end(read, stream, 5) == "999"  # the first entry is already later: read nothing


def test_the_scan_reads_at_most_its_limit_of_entries(r, redis_url):
    client = Client(redis_url)
    inspector = Inspector(redis_url)
    task = client.enqueue("email", b"deep")
    client.enqueue_many([("other", b"y")] * 1500)  # its creation is the stream's 1,501st entry from the newest
    assert inspector.task_events("default", task.id, scan_limit=1500) == []
    assert [e.to_state for e in inspector.task_events("default", task.id, scan_limit=1501)] == ["pending"]
    client.close()
