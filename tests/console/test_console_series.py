"""The time charts of the dashboard, the queue page and the task type page: drawn from what the series hashes
hold, every range, the charts alone as a fragment for the live page, and the type page's figures and errors.
Bad ranges are 400, unknown queues 404. Real Redis; the series are written as a worker writes them."""

from __future__ import annotations

import re
import time
from urllib.parse import quote

import pytest
from django.urls import reverse

from taskq.queues.engine import Keys
from taskq.queues.engine.broker.commands import run_command
from taskq.queues.engine.sans_io import drive
from taskq.queues.engine.series import RANGES, SeriesTally, flush_flow, gauge_flow

pytestmark = pytest.mark.django_db


@pytest.fixture
def series(redis_client):
    """Write a worker's tally (and a sampler's gauges) for now."""

    def write(entries, gauges=None):
        tally = SeriesTally()
        for queue, task_type, outcome, run_ms in entries:
            tally.finished(queue, task_type, outcome, run_ms, waited_ms=30, at=time.time())
        drive(flush_flow(Keys(), tally.drain()), lambda request: run_command(redis_client, request))
        if gauges:
            drive(gauge_flow(Keys(), gauges, time.time()), lambda request: run_command(redis_client, request))

    return write


def titles(body: str) -> list[str]:
    return re.findall(r"<figcaption>([^<]+)</figcaption>", body)


def test_the_dashboard_charts_every_queues_successes_and_failures_stacked_by_queue(viewer_client, seed, series):
    seed.pending(queue="critical")
    seed.pending(queue="default")
    series([("critical", "email", "ok", 3)] * 7 + [("default", "sms", "archive", 9)])
    body = viewer_client.get("/").content.decode()
    assert titles(body) == ["Succeeded by queue", "Failed by queue"]
    assert "critical: 7" in body and "default: 1" in body  # the hover titles of this minute's columns
    assert 'data-live-series="?range=1h&amp;fragment=series"' in body


def test_past_the_eight_busiest_queues_the_rest_are_added_up_as_other(viewer_client, seed, series):
    seed.archived(queue="q9")  # q9 processed one today: among the busiest; q7 and q8 are the rest
    for n in range(9):
        seed.pending(queue=f"q{n}")
    series([(f"q{n}", "t", "ok", 3) for n in range(10) for _ in range(n + 1)])
    body = viewer_client.get("/").content.decode()
    assert "q9: 10" in body and "q0: 1" in body and "q6: 7" in body
    assert "q7:" not in body and "q8:" not in body and "other: 17" in body  # 8 + 9


@pytest.mark.parametrize("range_name", list(RANGES))
def test_every_range_draws_on_every_page(viewer_client, seed, series, range_name):
    task_id = seed.pending(task_type="email:deliver")
    series([("default", "email:deliver", "ok", 3)], gauges={"default": (12, 0.25)})
    type_url = reverse("taskq:task-type", args=["default", "email:deliver"])
    for url in ("/", "/queues/default/", type_url):
        response = viewer_client.get(f"{url}?range={range_name}")
        assert response.status_code == 200, url
        body = response.content.decode()
        assert f'aria-current="true">{range_name}</a>' in body
        assert body.count('<svg class="chart time"') >= 2
        assert "email:deliver: 1" in body or "default: 1" in body or "succeeded: 1" in body
    assert reverse("taskq:task", args=["default", task_id])


def test_the_queue_page_charts_size_latency_throughput_and_error_rate(viewer_client, seed, series):
    seed.pending()
    series(
        [("default", "email:deliver", "ok", 3)] * 3 + [("default", "email:deliver", "retry", 40)],
        gauges={"default": (12, 0.25)},
    )
    body = viewer_client.get("/queues/default/?state=pending").content.decode()
    assert titles(body) == ["Size", "Latency", "Throughput", "Error rate"]
    assert "size: 12" in body and "latency: 250 ms" in body
    assert "succeeded: 3" in body and "failed: 1" in body and "failed, % of attempts: 25 %" in body
    # The range links keep the page's own parameters.
    assert 'href="?state=pending&amp;range=24h"' in body


def test_the_charts_alone_for_the_live_page(viewer_client, seed, series):
    seed.pending()
    series([("default", "t", "ok", 3)])
    for url in ("/?range=6h&fragment=series", "/queues/default/?range=6h&fragment=series"):
        response = viewer_client.get(url)
        assert response.status_code == 200
        body = response.content.decode().strip()
        assert "<html" not in body and '<nav class="main' not in body and body.count("<section") == 1
        assert 'data-live-series="?range=6h&amp;fragment=series"' in body


def test_the_task_type_page_gives_percentiles_errors_and_counts(viewer_client, seed, series):
    seed.archived(task_type="email:deliver", error="SMTP 451 greylisted")
    seed.archived(task_type="email:deliver", error="SMTP 451 greylisted")
    seed.retry(task_type="email:deliver", error="SMTP 550 no such user")
    seed.archived(task_type="email:deliverable", error="another type")  # the type filter is a prefix: kept out
    series([("default", "email:deliver", "ok", 3)] * 98 + [("default", "email:deliver", "archive", 700)] * 2)
    queue_page = viewer_client.get("/queues/default/?state=archived").content.decode()
    url = reverse("taskq:task-type", args=["default", "email:deliver"])
    assert f'href="{url}"' in queue_page  # every type link leads to its page
    body = viewer_client.get(url).content.decode()
    assert titles(body) == ["Run time", "Throughput", "Error rate", "Wait before start"]
    assert re.search(r"<dt>Succeeded</dt><dd>98</dd>", body) and re.search(r"<dt>Failed</dt><dd>2</dd>", body)
    assert re.search(r"<dt>Run time p50</dt><dd>≤ 5 ms</dd>", body)
    assert re.search(r"<dt>p99</dt><dd>≤ 1 s</dd>", body) and re.search(r"<dt>Wait p95</dt><dd>≤ 50 ms</dd>", body)
    errors = re.findall(r"<tr><td><code>([^<]+)</code></td><td class=\"num\">(\d+)</td></tr>", body)
    assert errors == [("SMTP 451 greylisted", "2"), ("SMTP 550 no such user", "1")]


def test_a_type_with_slashes_and_tildes_has_its_page(viewer_client, seed, series):
    seed.pending(task_type="a/b~c")
    url = reverse("taskq:task-type", args=["default", "a/b~c"])
    assert "~2F" in url and "~7E" in url
    assert viewer_client.get(url).status_code == 200


@pytest.mark.parametrize("query", ["range=2h", "range=1H", "range=" + "x" * 500, "fragment=all"])
def test_a_bad_range_or_fragment_is_400_everywhere(viewer_client, seed, query):
    seed.pending()
    assert b'aria-current="true">1h</a>' in viewer_client.get("/?range=").content  # empty: the default range
    for url in ("/", "/queues/default/", reverse("taskq:task-type", args=["default", "email:deliver"])):
        response = viewer_client.get(f"{url}?{query}")
        assert response.status_code == 400, url
        assert b"range" in response.content or b"fragment" in response.content
        if query == "range=2h":
            assert "use one of 1h, 6h, 24h, 7d, 30d" in response.content.decode()  # the valid values, named


def test_the_type_page_of_an_unknown_queue_is_404_and_a_bad_type_segment_too(viewer_client, seed):
    seed.pending()
    assert viewer_client.get(reverse("taskq:task-type", args=["nope", "email"])).status_code == 404
    assert viewer_client.get("/queues/default/types/a~b/").status_code == 404  # a stray ~
    assert viewer_client.get("/queues/default/types/" + quote("\x01") + "/").status_code == 404


def test_the_type_page_is_for_viewers(client, nobody_client, seed):
    seed.pending()
    url = reverse("taskq:task-type", args=["default", "email:deliver"])
    assert client.get(url).status_code == 302  # to the login page
    assert nobody_client.get(url).status_code == 403
