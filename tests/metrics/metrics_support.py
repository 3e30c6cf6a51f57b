"""Helpers of the metrics tests: scraping /metrics into plain series, and every metric name our exporters serve."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from taskq.queues.engine import Client


def scrape(client, **headers) -> dict[str, dict[tuple, float]]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    series: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            series.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return series


def exported_names(client, engine: Client) -> set[str]:
    """Every sample name of the console's /metrics (with a failed task, so the per-type series exist too) and of a
    worker's registry (histograms with their _bucket, _count and _sum, counters with their _total)."""
    from taskq.worker.metrics import WorkerMetrics

    broker = engine.broker
    engine.enqueue("email", b"x", queue="q")
    [leased] = broker.run(broker.transitions.dequeue("q", 1, 30, "w", "t:"))
    broker.run(broker.transitions.retry("q", leased.id, leased.token, 0, "boom", worker="w"))
    names = set(scrape(client))
    for family in WorkerMetrics().registry.collect():
        suffixes = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",)}.get(family.type, ("",))
        names |= {family.name + suffix for suffix in suffixes}
    return names
