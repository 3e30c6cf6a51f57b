"""A queue with pending tasks and no live server reading it gets a warning on the dashboard, on its own page and in
``tasks stats``; /metrics has the number of live servers reading each queue (``taskq_queue_servers``)."""

from __future__ import annotations

import io
import json
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from taskq.queues.cli import main
from taskq.queues.engine import serving
from taskq.queues.engine.worker_store import WorkerStore

pytestmark = pytest.mark.django_db


def write_server(broker, server_id: str, queues: dict[str, int], patterns: list[str], status: str = "active") -> None:
    info = {"id": server_id, "host": "h", "pid": 1, "status": status, "queues": queues, "patterns": patterns}
    WorkerStore(broker).write_server(info, {}, ttl=60)


@pytest.fixture
def fleet(engine, seed):
    """served: read by name; tenant-a: by a pattern; quieted: only by a quiet server; orphan: by nobody, with two
    pending tasks; later: by nobody, but nothing pending (only a scheduled task)."""
    for queue in ("served", "tenant-a", "quieted", "orphan", "orphan"):
        seed.client.enqueue("job", b"x", queue=queue)
    seed.client.enqueue("job", b"x", queue="later", process_in=3600)
    write_server(seed.broker, "host-a:1", {"served": 1}, ["tenant-*"])
    write_server(seed.broker, "host-b:2", {"quieted": 1}, [], status="quiet")
    return engine


def test_which_queues_are_unserved(fleet):
    infos = fleet.queue_infos(fleet.queues())
    servers = fleet.servers()
    assert [i.queue for i in serving.unserved(infos, servers)] == ["orphan", "quieted"]
    assert serving.readers(["served", "tenant-a", "quieted", "orphan", "later"], servers) == {
        "served": 1,
        "tenant-a": 1,
        "quieted": 0,
        "orphan": 0,
        "later": 0,
    }
    assert serving.unserved(infos, []) == [i for i in infos if i.pending]


def test_the_dashboard_warns_of_each_unserved_queue(viewer_client, fleet):
    page = viewer_client.get("/").content.decode()
    assert 'data-unserved-queue="orphan"' in page and 'data-unserved-queue="quieted"' in page
    for queue in ("served", "tenant-a", "later"):
        assert f'data-unserved-queue="{queue}"' not in page
    assert "its 2 pending tasks will wait" in page


def test_the_queue_page_warns_only_when_its_queue_is_unserved(viewer_client, fleet):
    orphan = viewer_client.get("/queues/orphan/").content.decode()
    assert 'data-unserved-queue="orphan"' in orphan and "No live server reads queue" in orphan
    assert "data-unserved" not in viewer_client.get("/queues/served/").content.decode()
    assert "data-unserved" not in viewer_client.get("/queues/tenant-a/").content.decode()


def test_tasks_stats_warns(settings, redis_url, fleet):
    settings.REDIS_URL = redis_url

    def stats(*flags: str) -> str:
        stdout = io.StringIO()
        assert main(["stats", *flags], stdout=stdout, stderr=io.StringIO()) == 0
        return stdout.getvalue()

    assert json.loads(stats("--json"))["unserved"] == [
        {"queue": "orphan", "pending": 2},
        {"queue": "quieted", "pending": 1},
    ]
    text = stats()
    assert "WARNING: queue orphan has 2 pending tasks and no live server reads it" in text
    assert "WARNING: queue quieted has 1 pending task and no live server reads it" in text
    assert "queue served" not in text


def test_metrics_counts_the_live_servers_reading_each_queue(client, fleet):
    response = client.get("/metrics")
    [gauge] = [f for f in text_string_to_metric_families(response.content.decode()) if f.name == "taskq_queue_servers"]
    assert {sample.labels["queue"]: sample.value for sample in gauge.samples} == {
        "served": 1,
        "tenant-a": 1,
        "quieted": 0,
        "orphan": 0,
        "later": 0,
    }


def test_a_queue_the_http_api_consumes_is_served_and_the_note_is_written_at_most_every_few_seconds(
    viewer_client, fleet, redis_url, redis_client
):
    from taskq.queues.engine.clock import FakeClock
    from taskq.queues.engine.remote_consumer import MARK_EVERY, RemoteConsumer

    clock = FakeClock(time.time())
    consumer = RemoteConsumer(redis_url, clock=clock)
    consumer.consume(["orphan-api"], 30)  # polled, nothing there yet: still a consumer of the queue
    first = redis_client.hget("tq:api:consumed", "orphan-api")
    clock.advance(MARK_EVERY / 2)
    consumer.consume(["orphan-api"], 30)
    assert redis_client.hget("tq:api:consumed", "orphan-api") == first  # not written again so soon
    consumer.consume(["orphan"], 30, count=1)  # takes one of orphan's two pending tasks, and notes the queue
    page = viewer_client.get("/").content.decode()
    assert 'data-unserved-queue="orphan"' not in page and 'data-unserved-queue="quieted"' in page
    assert "data-unserved" not in viewer_client.get("/queues/orphan/").content.decode()
    # Not polled for longer than the window: reported again.
    redis_client.hset("tq:api:consumed", "orphan", int((fleet.broker.clock.now() - 301) * 1000))  # the console's clock
    assert 'data-unserved-queue="orphan"' in viewer_client.get("/").content.decode()
    consumer.close()
