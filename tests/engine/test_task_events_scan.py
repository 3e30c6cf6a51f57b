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
