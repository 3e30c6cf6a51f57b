"""A task's history is read newest first and ends at the task's creation (the console's task page at scale)."""

from __future__ import annotations

from queues.engine import Client, Inspector


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
