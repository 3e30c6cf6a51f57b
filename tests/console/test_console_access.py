"""The access matrix: anonymous -> login, no permission -> 403, viewer reads, operator acts; CSRF on every
POST; GET never changes anything; read-only mode refuses every action."""

from __future__ import annotations

import pytest
from console_support import logged_in
from django.test import Client

pytestmark = pytest.mark.django_db

PAGES = ["/", "/?days=90", "/queues/default/", "/queues/default/?state=archived", "/servers/", "/redis/", "/settings/"]


def task_page(seed) -> str:
    return f"/queues/default/tasks/{seed.pending()}/"


def actions(task_id: str) -> list[tuple[str, dict]]:
    return [
        ("/queues/default/pause/", {}),
        ("/queues/default/resume/", {}),
        ("/queues/default/batch/", {"action": "archive", "task_ids": [task_id]}),
        ("/queues/default/all/", {"action": "delete_all", "state": "pending"}),
        ("/queues/default/delete/", {"force": "on"}),
    ]


@pytest.fixture
def pages(seed) -> list[str]:
    return [*PAGES, task_page(seed)]


def test_anonymous_is_sent_to_login_everywhere(client, seed, pages):
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url
    for url, data in actions(seed.pending()):
        response = client.post(url, data)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_logged_in_without_permission_gets_403(nobody_client, seed, pages):
    for url in pages:
        assert nobody_client.get(url).status_code == 403, url
    task_id = seed.pending()
    for url, data in actions(task_id):
        assert nobody_client.post(url, data).status_code == 403, url
    assert seed.client  # nothing happened:
    assert nobody_client.get("/settings/").status_code == 403


def test_viewer_reads_everything_and_acts_on_nothing(viewer_client, seed, pages, engine):
    for url in pages:
        assert viewer_client.get(url).status_code == 200, url
    task_id = seed.pending()
    before = engine.queue_info("default")
    for url, data in actions(task_id):
        response = viewer_client.post(url, data)
        assert response.status_code == 403, url
        assert b"may view the console but not act" in response.content
    after = engine.queue_info("default")
    assert (after.pending, after.paused) == (before.pending, before.paused) == (2, False)


def test_operator_can_read_and_act(operator_client, seed, pages, engine, audit):
    for url in pages:
        assert operator_client.get(url).status_code == 200, url
    task_id = seed.pending()
    for url, data in actions(task_id):
        assert operator_client.post(url, data).status_code == 302, url
    assert "default" not in engine.queues()  # the last action deleted the queue (forced)
    assert [c["action"] for c in audit] == [
        "pause_queue",
        "resume_queue",
        "archive_task",
        "delete_all",
        "delete_queue",
    ]


def test_superuser_has_every_permission(engine, db, seed):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    client = logged_in(admin)
    assert client.get("/").status_code == 200
    assert client.post("/queues/default/pause/", {}).status_code == 302 if seed.pending() else False
    assert engine.queue_info("default").paused


def test_actions_refuse_get(operator_client, seed):
    task_id = seed.pending()
    for url, _data in actions(task_id):
        assert operator_client.get(url).status_code == 405, url


def test_pages_refuse_post(operator_client, seed):
    seed.pending()
    for url in ("/", "/queues/default/", "/servers/", "/redis/"):
        assert operator_client.post(url).status_code == 405, url


def test_get_never_mutates(operator_client, seed, engine, redis_client):
    task_id = seed.pending()
    seed.scheduled()
    keys_before = {k: redis_client.type(k) for k in redis_client.scan_iter()}
    dump_before = {k: redis_client.dump(k) for k in keys_before if b"events" not in k}
    for url, data in actions(task_id):
        operator_client.get(url, data)
    for url in [*PAGES, f"/queues/default/tasks/{task_id}/", "/queues/default/?state=pending&type=e&text=a"]:
        operator_client.get(url)
    assert {k: redis_client.dump(k) for k in keys_before if b"events" not in k} == dump_before
    assert not engine.queue_info("default").paused


def test_csrf_is_enforced_on_every_post(operator, seed, engine):
    client = logged_in(operator, enforce_csrf_checks=True)
    task_id = seed.pending()
    for url, data in actions(task_id):
        assert client.post(url, data).status_code == 403, url
    assert client.post("/settings/", {"rows_per_page": "50", "theme": "dark"}).status_code == 403
    info = engine.queue_info("default")
    assert (info.pending, info.paused) == (1, False)


def test_csrf_token_from_the_page_is_accepted(operator, seed, engine, audit):
    seed.pending()
    client = logged_in(operator, enforce_csrf_checks=True)
    client.get("/")
    token = client.cookies["csrftoken"].value
    response = client.post("/queues/default/pause/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert engine.queue_info("default").paused


def test_read_only_mode_hides_and_refuses_actions(operator_client, seed, engine, settings, audit):
    settings.TASKS_CONSOLE_READ_ONLY = True
    task_id = seed.pending()
    dashboard = operator_client.get("/").content.decode()
    assert "read-only" in dashboard and "/pause/" not in dashboard and "/delete/" not in dashboard
    queue_page = operator_client.get("/queues/default/?state=pending").content.decode()
    assert 'name="task_ids"' not in queue_page and "delete_all" not in queue_page
    for url, data in actions(task_id):
        response = operator_client.post(url, data)
        assert response.status_code == 403, url
        assert b"read-only mode" in response.content
    info = engine.queue_info("default")
    assert (info.pending, info.paused) == (1, False)
    assert audit == []


def test_login_page_then_dashboard(viewer, engine):
    client = Client()
    response = client.post("/accounts/login/", {"username": "vera", "password": "pw-for-tests-only", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
