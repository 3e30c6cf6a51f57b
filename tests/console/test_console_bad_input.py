"""Bad input never gives a 500: unknown queue or task -> 404, bad query values -> 400 or clamped, odd names and
oversized ids handled, and Redis down -> a 503 page that says so."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_unknown_queue_and_task_are_404(viewer_client, seed):
    seed.pending()
    assert viewer_client.get("/queues/nope/").status_code == 404
    assert viewer_client.get("/queues/nope/tasks/abc/").status_code == 404
    response = viewer_client.get("/queues/default/tasks/abc/")
    assert response.status_code == 404
    assert b"no task" in response.content


@pytest.mark.parametrize(
    "query",
    [
        "state=bogus",
        "page=x",
        "page=0",
        "page=-3",
        "size=7",
        "size=abc",
        "task_id=" + "x" * 10_000,
        "type=" + "t" * 300,
    ],
)
def test_bad_queue_page_query_is_400(viewer_client, seed, query):
    seed.pending()
    assert viewer_client.get(f"/queues/default/?{query}").status_code == 400


@pytest.mark.parametrize("query", ["days=2", "days=x", "days=-1"])
def test_bad_dashboard_period_is_400(viewer_client, engine, query):
    assert viewer_client.get(f"/?{query}").status_code == 400


def test_bad_task_page_query_is_400(viewer_client, seed):
    task_id = seed.pending()
    assert viewer_client.get(reverse("taskq:task", args=["default", task_id]) + "?full=everything").status_code == 400


def test_huge_page_number_is_clamped(viewer_client, seed):
    seed.pending()
    response = viewer_client.get("/queues/default/?state=pending&page=" + "9" * 30)
    assert response.status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/queues/%7Bbad%7D/",
        "/queues/a%7Bb/",
        "/queues/%7Bbad%7D/tasks/x/",
        "/queues/default/tasks/" + "x" * 10_000 + "/",
        "/queues/" + "q" * 10_000 + "/",
        "/queues/a~b/",
        "/queues/%01/",
    ],
)
def test_invalid_names_and_ids_are_404(viewer_client, seed, path):
    seed.pending()
    assert viewer_client.get(path).status_code == 404


def test_oversized_ids_in_actions_are_404(operator_client, seed, audit):
    seed.pending()
    assert operator_client.post("/queues/%7Bx%7D/pause/", {}).status_code == 404
    assert audit == []


@pytest.mark.parametrize(
    "name",
    ["日本語キュー", "emails:high", "a.b", "...", "a]b!", "with/slash", "tilde~name", "per%cent", "sp ace", "ünï"],
)
def test_odd_queue_names_work_end_to_end(operator_client, seed, engine, name, audit):
    task_id = seed.pending(queue=name)
    other = seed.pending(queue=name, task_id="id/with~odd chars")
    url = reverse("taskq:queue", args=[name])
    assert operator_client.get(url).status_code == 200
    body = operator_client.get(url + "?state=pending").content.decode()
    assert quote(task_id) in body or task_id in body
    assert operator_client.get(reverse("taskq:task", args=[name, task_id])).status_code == 200
    assert operator_client.get(reverse("taskq:task", args=[name, other])).status_code == 200
    assert operator_client.get("/").status_code == 200
    assert operator_client.post(reverse("taskq:queue-pause", args=[name])).status_code == 302
    assert engine.queue_info(name).paused


@pytest.fixture
def redis_down(settings, engine):
    from taskq.queues import handles

    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    handles.reset()
    yield
    handles.reset()


@pytest.mark.parametrize("url", ["/", "/queues/default/", "/queues/default/tasks/abc/", "/servers/", "/redis/"])
def test_redis_down_is_a_503_page(viewer_client, redis_down, url):
    response = viewer_client.get(url)
    assert response.status_code == 503
    assert b"Redis is unavailable" in response.content
    assert b"Traceback" not in response.content


def test_redis_down_on_actions_is_a_503_page(operator_client, redis_down, audit):
    for url, data in [
        ("/queues/default/pause/", {}),
        ("/queues/default/delete/", {"force": "on"}),
        ("/queues/default/batch/", {"action": "delete", "task_ids": ["a"]}),
        ("/queues/default/all/", {"action": "delete_all", "state": "pending"}),
    ]:
        assert operator_client.post(url, data).status_code == 503, url
    assert audit == []


@pytest.mark.parametrize("url", ["redis://:::bad", "http://x", "redis://host:notaport/0"])
def test_a_malformed_redis_url_is_a_503_page_naming_the_setting(viewer_client, settings, engine, url):
    """Under daphne, which runs no system checks, the console starts with a malformed REDIS_URL (taskq.E103 stops
    runserver and migrate): every page then says what is wrong, the summary bar included, never a 500."""
    from taskq.queues import handles

    settings.REDIS_URL = url
    handles.reset()
    try:
        for page in ("/", "/queues/default/", "/servers/"):
            response = viewer_client.get(page)
            assert response.status_code == 503, page
            assert b"REDIS_URL: bad Redis URL" in response.content, page
        assert viewer_client.get("/settings/").status_code == 200
    finally:
        handles.reset()


def test_settings_page_works_while_redis_is_down(viewer_client, redis_down):
    assert viewer_client.get("/settings/").status_code == 200
