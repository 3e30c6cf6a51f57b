"""/metrics counts the tasks waiting for their dependencies (issue 16): a ``waiting`` state in ``taskq_tasks``
and in the per-type gauge, and in ``taskq_queue_size``."""

from __future__ import annotations

from metrics_support import scrape


def test_waiting_tasks_have_their_state_and_count_in_the_size(client, engine):
    a = engine.enqueue("fetch", b"a", queue="etl")
    engine.enqueue("store", b"b", queue="etl", after=[a.id])
    series = scrape(client)
    assert series["taskq_tasks"][(("queue", "etl"), ("state", "waiting"))] == 1
    assert series["taskq_type_tasks"][(("queue", "etl"), ("state", "waiting"), ("type", "store"))] == 1
    assert series["taskq_queue_size"][(("queue", "etl"),)] == 2
