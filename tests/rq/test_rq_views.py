"""The RQ pages and actions through Django's test client, against real RQ state made by a real ``rq worker``:
counts and job lists, requeue and delete by POST, the access matrix, CSRF, bad input and Redis down."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import rq_jobs
from django.test import Client
from django.urls import reverse
from rq.job import Job

pytestmark = pytest.mark.django_db


def login(client: Client, user) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def failed_job(rq_queue, rq_worker, tmp_path):
    """A job in the failed registry of "default" that succeeds once ``job.marker`` exists."""
    marker = tmp_path / "fixed"
    job = rq_queue().enqueue(rq_jobs.fail_until_marker, str(marker))
    rq_worker("default")
    job.marker = marker
    return job


def queue_url(name: str = "default", **params: object) -> str:
    query = "&".join(f"{key}={value}" for key, value in params.items())
    return reverse("taskq:rq:queue", args=[name]) + (f"?{query}" if query else "")


def job_ids_on(response) -> list[str]:
    return re.findall(r'data-job-id="([^"]+)"', response.content.decode())


def tab_counts(response) -> dict[str, int]:
    found = re.findall(r'data-registry="(\w+)"[^>]*>\w+<span class="count">(\d+)</span>', response.content.decode())
    return {registry: int(count) for registry, count in found}


# --- pages --------------------------------------------------------------------------------------------------


def test_queue_page_shows_counts_per_registry_and_each_registrys_jobs(client, users, rq_queue, rq_worker):
    queue = rq_queue()
    ok = queue.enqueue(rq_jobs.add, 1, 2)
    failing = queue.enqueue(rq_jobs.explode, "page failure")
    scheduled = queue.enqueue_in(timedelta(hours=1), rq_jobs.add, 3, 4)
    deferred = queue.enqueue(rq_jobs.add, 5, 6, depends_on=failing)
    rq_worker("default")
    waiting = queue.enqueue(rq_jobs.add, 7, 8)
    login(client, users["viewer"])

    response = client.get(queue_url())
    assert response.status_code == 200
    assert tab_counts(response) == {
        "queued": 1,
        "started": 0,
        "scheduled": 1,
        "deferred": 1,
        "finished": 1,
        "failed": 1,
    }
    assert job_ids_on(response) == [waiting.id]
    expected = {"failed": failing.id, "finished": ok.id, "scheduled": scheduled.id, "deferred": deferred.id}
    for registry, job_id in expected.items():
        assert job_ids_on(client.get(queue_url(registry=registry))) == [job_id], registry
    assert job_ids_on(client.get(queue_url(registry="started"))) == []

    detail = client.get(reverse("taskq:rq:job", args=["default", failing.id]))
    assert detail.status_code == 200
    assert b"RuntimeError: page failure" in detail.content and b"rq_jobs.explode" in detail.content
    assert b"Requeue" not in detail.content, "a viewer sees no action buttons"


def test_index_and_pages_are_marked_rq(client, users, rq_queue):
    rq_queue("low").enqueue(rq_jobs.add, 1, 1)
    login(client, users["viewer"])
    response = client.get(reverse("taskq:rq:index"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'class="badge rq">RQ<' in body
    assert re.search(r'data-rq-queue="low">.*?data-registry="queued">1<', body, re.S)
    assert "reports/daily" in body


def test_job_list_is_paginated_by_range(client, users, rq_queue):
    ids = [rq_queue().enqueue(rq_jobs.add, i, i).id for i in range(5)]
    login(client, users["viewer"])
    assert job_ids_on(client.get(queue_url(page=1, size=2))) == ids[:2]
    second = client.get(queue_url(page=2, size=2))
    assert job_ids_on(second) == ids[2:4]
    assert b'rel="prev"' in second.content and b'rel="next"' in second.content
    assert job_ids_on(client.get(queue_url(page=3, size=2))) == ids[4:]
    past_end = client.get(queue_url(page=9, size=2))
    assert past_end.status_code == 200 and b"past the end" in past_end.content


def test_a_queue_name_with_a_slash_has_its_pages(client, users, rq_queue):
    job = rq_queue("reports/daily").enqueue(rq_jobs.add, 1, 1)
    login(client, users["viewer"])
    url = queue_url("reports/daily")
    assert "reports~2Fdaily" in url
    assert job_ids_on(client.get(url)) == [job.id]
    assert client.get(reverse("taskq:rq:job", args=["reports/daily", job.id])).status_code == 200


# --- actions ------------------------------------------------------------------------------------------------


def test_requeue_from_the_console_then_the_real_worker_finishes_it(client, users, failed_job, rq_worker):
    login(client, users["operator"])
    detail_url = reverse("taskq:rq:job", args=["default", failed_job.id])
    assert b"Requeue" in client.get(detail_url).content

    response = client.post(reverse("taskq:rq:requeue", args=["default", failed_job.id]))
    assert response.status_code == 302 and response["Location"] == detail_url
    assert tab_counts(client.get(queue_url())) == {
        "queued": 1,
        "started": 0,
        "scheduled": 0,
        "deferred": 0,
        "finished": 0,
        "failed": 0,
    }

    failed_job.marker.touch()
    rq_worker("default")
    page = client.get(queue_url(registry="finished"))
    assert job_ids_on(page) == [failed_job.id]
    assert Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "finished"
    assert _audited("rq_requeue_job", failed_job.id)


def test_requeue_of_a_job_that_is_not_failed_is_a_409(client, users, rq_queue):
    job = rq_queue().enqueue(rq_jobs.add, 1, 1)
    login(client, users["operator"])
    response = client.post(reverse("taskq:rq:requeue", args=["default", job.id]))
    assert response.status_code == 409
    assert b"not in the failed registry" in response.content


def test_delete_from_the_console(client, users, failed_job):
    login(client, users["operator"])
    response = client.post(reverse("taskq:rq:delete", args=["default", failed_job.id]))
    assert response.status_code == 302 and response["Location"] == queue_url(registry="failed")
    assert job_ids_on(client.get(queue_url(registry="failed"))) == []
    assert client.get(reverse("taskq:rq:job", args=["default", failed_job.id])).status_code == 404
    assert client.post(reverse("taskq:rq:delete", args=["default", failed_job.id])).status_code == 404
    assert _audited("rq_delete_job", failed_job.id)


def _audited(action: str, job_id: str) -> bool:
    from taskq.queues.models import AuditLog

    return AuditLog.objects.filter(action=action, queue="default", task_ids=[job_id], username="operator").exists()


# --- access -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "page_status", "action_status"),
    [("anonymous", 302, 302), ("nobody", 403, 403), ("viewer", 200, 403), ("operator", 200, 302)],
)
def test_access_matrix(client, users, failed_job, role, page_status, action_status):
    if role != "anonymous":
        login(client, users[role])
    pages = [
        reverse("taskq:rq:index"),
        queue_url(),
        queue_url(registry="failed"),
        reverse("taskq:rq:job", args=["default", failed_job.id]),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == page_status, url
        if role == "anonymous":
            assert response["Location"].startswith("/accounts/login/")

    response = client.post(reverse("taskq:rq:requeue", args=["default", failed_job.id]))
    assert response.status_code == action_status
    still_failed = Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "failed"
    assert still_failed == (role != "operator")


def test_superuser_may_do_everything(client, failed_job):
    from django.contrib.auth import get_user_model

    login(client, get_user_model().objects.create_superuser("root", password="pw"))
    assert client.get(queue_url(registry="failed")).status_code == 200
    assert client.post(reverse("taskq:rq:delete", args=["default", failed_job.id])).status_code == 302


def test_get_never_mutates_and_actions_refuse_get(client, users, failed_job):
    login(client, users["operator"])
    for name in ("taskq:rq:requeue", "taskq:rq:delete"):
        assert client.get(reverse(name, args=["default", failed_job.id])).status_code == 405
    assert Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "failed"


def test_csrf_is_enforced_on_actions(users, failed_job):
    client = login(Client(enforce_csrf_checks=True), users["operator"])
    url = reverse("taskq:rq:requeue", args=["default", failed_job.id])
    assert client.post(url).status_code == 403
    assert Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "failed"

    page = client.get(reverse("taskq:rq:job", args=["default", failed_job.id]))
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content).group(1).decode()
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 302
    assert Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "queued"


def test_read_only_mode_refuses_actions(client, users, failed_job, settings):
    settings.TASKS_CONSOLE_READ_ONLY = True
    login(client, users["operator"])
    assert b"Requeue" not in client.get(reverse("taskq:rq:job", args=["default", failed_job.id])).content
    assert client.post(reverse("taskq:rq:requeue", args=["default", failed_job.id])).status_code == 403
    assert Job.fetch(failed_job.id, connection=failed_job.connection).get_status() == "failed"


# --- bad input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"registry": "archived"}, 400),
        ({"registry": "<script>"}, 400),
        ({"page": "x"}, 400),
        ({"page": "0"}, 400),
        ({"page": "-3"}, 400),
        ({"page": "9" * 40}, 400),
        ({"size": "0"}, 400),
        ({"size": "abc"}, 400),
        ({"size": "100000"}, 200),  # clamped to the maximum page size
        ({"page": "5000"}, 200),  # past the end: an empty page that says so
    ],
)
def test_bad_query_parameters(client, users, rq_queue, params, status):
    rq_queue().enqueue(rq_jobs.add, 1, 1)
    login(client, users["viewer"])
    assert client.get(queue_url(**params)).status_code == status


def test_size_is_clamped(client, users, rq_queue):
    from taskq.console.rq.bridge import MAX_PAGE_SIZE

    login(client, users["viewer"])
    response = client.get(queue_url(size=100000))
    assert f"{MAX_PAGE_SIZE} per page".encode() in response.content


@pytest.mark.parametrize(
    "path",
    [
        "/rq/nope/",
        "/rq/nope/jobs/abc/",
        "/rq/default/jobs/no-such-job/",
        "/rq/default/jobs/" + "x" * 10_000 + "/",
        "/rq/default/jobs/a:b/",
        "/rq/%E2%9C%93%7B%7D*/",
        "/rq/default/jobs/%E2%9C%93/",
        "/rq/stray~tilde/",
    ],
)
def test_unknown_queue_or_job_is_404(client, users, rq_redis, path):
    login(client, users["operator"])
    assert client.get(path).status_code == 404
    assert client.post(path + "requeue/").status_code == 404
    assert client.post(path + "delete/").status_code == 404


def test_job_of_another_queue_is_404(client, users, rq_queue):
    job = rq_queue("low").enqueue(rq_jobs.add, 1, 1)
    login(client, users["operator"])
    assert client.get(reverse("taskq:rq:job", args=["default", job.id])).status_code == 404
    assert client.post(reverse("taskq:rq:delete", args=["default", job.id])).status_code == 404
    assert client.get(reverse("taskq:rq:job", args=["low", job.id])).status_code == 200


def test_redis_down_is_a_503_page(client, users, settings):
    settings.RQ_QUEUES = {"default": {"URL": "redis://127.0.0.1:1/5"}}
    login(client, users["operator"])
    for response in (
        client.get(reverse("taskq:rq:index")),
        client.get(queue_url()),
        client.get(reverse("taskq:rq:job", args=["default", "abc"])),
        client.post(reverse("taskq:rq:requeue", args=["default", "abc"])),
    ):
        assert response.status_code == 503
        assert b"Redis is unavailable" in response.content
