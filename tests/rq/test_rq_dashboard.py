"""The dashboard's RQ section: RQ queues beside taskq's, marked RQ, with counts per registry; RQ's Redis being
down leaves the rest of the dashboard working."""

from __future__ import annotations

import re

import pytest
import rq_jobs

pytestmark = pytest.mark.django_db


def test_dashboard_shows_rq_queues_with_counts_per_registry(client, users, rq_queue, rq_worker):
    queue = rq_queue()
    queue.enqueue(rq_jobs.add, 1, 1)
    queue.enqueue(rq_jobs.explode)
    rq_worker("default")
    queue.enqueue(rq_jobs.add, 2, 2)
    client.force_login(users["viewer"])

    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    section = body[body.index('id="rq-queues-heading"') :]
    assert 'class="badge rq">RQ<' in section
    row = re.search(r'data-rq-queue="default">(.*?)</tr>', section, re.S).group(1)
    counts = dict(re.findall(r'data-registry="(\w+)">(\d+)<', row))
    assert counts == {"queued": "1", "started": "0", "scheduled": "0", "deferred": "0", "finished": "1", "failed": "1"}
    assert 'href="/rq/default/?registry=failed"' in row
    assert 'data-rq-queue="reports/daily"' in section


def test_dashboard_survives_rqs_redis_being_down(client, users, rq_redis, settings):
    settings.RQ_QUEUES = {"default": {"URL": "redis://127.0.0.1:1/5"}}
    client.force_login(users["viewer"])
    response = client.get("/")
    assert response.status_code == 200
    assert b"RQ&#x27;s Redis cannot be read" in response.content or b"RQ's Redis cannot be read" in response.content
