"""django-rq's own admin pages, reachable under /admin/django_rq/: a queue index past RQ_QUEUES is a 404 (django-rq
itself raises IndexError there, a 500)."""

from __future__ import annotations

import pytest

BASE = "/admin/django_rq/dashboard/"


@pytest.mark.parametrize(
    "path",
    ["queues/99/", "queues/99/details/", "queues/99/failed/", "queues/1/some-job/", "workers/99/", "schedulers/99/"],
)
def test_a_queue_index_that_does_not_exist_is_404(admin_client, rq_redis, path):
    response = admin_client.get(BASE + path)
    assert response.status_code == 404


def test_the_queue_that_exists_still_has_its_page(admin_client, rq_redis):
    assert admin_client.get(BASE + "queues/0/").status_code == 200


@pytest.mark.django_db
def test_an_anonymous_visitor_is_sent_to_the_login_page_not_told_the_index_is_unknown(client, rq_redis):
    response = client.get(BASE + "queues/99/")
    assert response.status_code == 302 and "/login/" in response["Location"]
