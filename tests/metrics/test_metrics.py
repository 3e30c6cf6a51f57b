"""/metrics: names, labels and values agree with the inspector after a known workload; the token is enforced."""

from __future__ import annotations

from metrics_support import exported_names, scrape

from taskq.queues import conf
from taskq.queues.engine import STATES, Client, Inspector


def known_workload(engine: Client) -> None:
    broker = engine.broker
    engine.enqueue_many([("email:deliver", b"a")] * 3 + [("sms:send", b"b")] * 2, queue="mail")
    engine.enqueue("report:build", b"r", queue="reports", process_in=3600)
    leased = broker.run(broker.transitions.dequeue("mail", 3, 30, "w1", "t:"))
    broker.run(broker.transitions.done("mail", [(leased[0].id, leased[0].token)], "w1"))
    broker.run(broker.transitions.retry("mail", leased[1].id, leased[1].token, 0, "boom", worker="w1"))
    Inspector(conf.taskq_settings().redis_url).pause_queue("reports")


def test_metrics_agree_with_the_inspector(client, engine):
    known_workload(engine)
    inspector = Inspector(conf.taskq_settings().redis_url)
    series = scrape(client)
    for queue in ("mail", "reports"):
        info = inspector.queue_info(queue)
        for state in STATES:
            assert series["taskq_tasks"][(("queue", queue), ("state", state))] == getattr(info, state)
        assert series["taskq_queue_size"][(("queue", queue),)] == info.size
        assert series["taskq_queue_paused"][(("queue", queue),)] == (1 if info.paused else 0)
        assert series["taskq_tasks_processed_total"][(("queue", queue),)] == info.processed_total
        assert series["taskq_tasks_failed_total"][(("queue", queue),)] == info.failed_total
        assert series["taskq_queue_memory_usage_approx_bytes"][(("queue", queue),)] > 0
        assert series["taskq_queue_latency_seconds"][(("queue", queue),)] >= 0
    assert series["taskq_tasks"][(("queue", "mail"), ("state", "active"))] == 1
    assert series["taskq_tasks_processed_total"][(("queue", "mail"),)] == 2
    assert series["taskq_tasks_failed_total"][(("queue", "mail"),)] == 1
    assert series["taskq_queue_paused"][(("queue", "reports"),)] == 1
    # Per task type, which asynq lacks.
    email = (("queue", "mail"), ("state", "pending"), ("type", "email:deliver"))
    assert series["taskq_type_tasks"][email] == 0  # all three were dequeued
    assert series["taskq_type_tasks"][(("queue", "mail"), ("state", "pending"), ("type", "sms:send"))] == 2
    assert series["taskq_type_processed_total"][(("queue", "mail"), ("type", "email:deliver"))] == 2
    assert series["taskq_type_failed_total"][(("queue", "mail"), ("type", "email:deliver"))] == 1
    assert series["taskq_servers"][()] == 0


def test_every_known_queue_exports_every_series_even_when_empty(client, engine, redis_client):
    redis_client.sadd("tq:queues", "empty")
    series = scrape(client)
    for state in STATES:
        assert series["taskq_tasks"][(("queue", "empty"), ("state", state))] == 0
    for name in (
        "taskq_queue_size",
        "taskq_queue_latency_seconds",
        "taskq_queue_memory_usage_approx_bytes",
        "taskq_queue_paused",
        "taskq_tasks_processed_total",
        "taskq_tasks_failed_total",
    ):
        assert series[name][(("queue", "empty"),)] == 0
    labels = {name for samples in series.values() for key in samples for name, _ in key}
    assert labels <= {"queue", "state", "type"}, "no label per worker or task id"


def test_metrics_needs_no_login_but_honours_the_bearer_token(client, engine, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    remote = {"REMOTE_ADDR": "203.0.113.7"}  # loopback needs no token (tests/metrics/test_metrics_access.py)
    assert client.get("/metrics", **remote).status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong", **remote).status_code == 401
    assert client.get("/metrics?token=s3cret-token", **remote).status_code == 401  # header only
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-token", **remote).status_code == 401
    scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-token", **remote)


def test_metrics_refuses_other_methods(client, engine):
    assert client.post("/metrics").status_code == 405


def test_redis_down_fails_the_scrape_clearly(client, redis_down):
    response = client.get("/metrics")
    assert response.status_code == 503
    assert b"unreachable" in response.content


def test_every_metric_the_grafana_dashboard_charts_is_exported(client, engine, redis_client):
    """The dashboard and the exporters cannot drift apart: each series it queries exists in /metrics or in the
    worker's metrics (whose names are checked against worker/metrics.py)."""
    import json
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    dashboard = json.loads((repo / "metrics/grafana/dashboards/taskq.json").read_text())
    wanted = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"taskq_[a-z_]+", target["expr"])
    }
    assert wanted - exported_names(client, engine) == set()


def test_a_scrape_leaves_the_garbage_collector_as_it_found_it(client, engine):
    import gc

    assert gc.isenabled()
    scrape(client)
    assert gc.isenabled()
    gc.disable()
    try:
        scrape(client)
        assert not gc.isenabled()
    finally:
        gc.enable()
