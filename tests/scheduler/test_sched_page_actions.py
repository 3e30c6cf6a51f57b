"""The Schedulers page's actions on an entry (run now, pause, resume): operators only, POST with CSRF, audited,
an unknown entry a 404 that changes nothing; and what the page shows of each entry (paused state, next five runs,
the latest runs' sparkline and outcomes)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from taskq.queues.engine.broker import Broker
from tests.console.console_support import logged_in, make_user
from tests.scheduler.scheduler_support import fire_some

pytestmark = pytest.mark.django_db

PAUSED = "tq:{low}:cron:paused"


@pytest.fixture
def fired(engine, redis_url):
    return fire_some(redis_url)


@pytest.fixture
def operator():
    return logged_in(make_user("olga", "operate_console"))


def audit():
    from taskq.queues.models import AuditLog

    return [(a.action, a.queue, a.username, a.task_ids) for a in AuditLog.objects.order_by("id")]


def keys(redis_client):
    return {k: redis_client.dump(k) for k in redis_client.keys("*") if not k.endswith(b":events")}


def test_an_operator_pauses_resumes_and_runs_an_entry_now_each_audited(operator, fired, redis_client):
    entry, _ = fired
    response = operator.post(f"/schedulers/{entry.id}/pause/")
    assert (response.status_code, response["Location"]) == (302, f"/schedulers/#entry-{entry.id}")
    assert redis_client.hexists(PAUSED, entry.id)
    body = operator.get("/schedulers/").content.decode()
    assert "paused by console:olga" in body and f'action="/schedulers/{entry.id}/resume/"' in body
    assert "paused: no scheduler enqueues it" in body  # the message

    assert operator.post(f"/schedulers/{entry.id}/resume/").status_code == 302
    assert not redis_client.exists(PAUSED)
    assert operator.post(f"/schedulers/{entry.id}/run/").status_code == 302
    (run,) = [k.decode() for k in redis_client.keys("tq:{low}:t:*:manual")]
    task_id = run.removeprefix("tq:{low}:t:")
    assert audit() == [
        ("pause_cron_entry", "low", "olga", []),
        ("resume_cron_entry", "low", "olga", []),
        ("run_cron_entry", "low", "olga", [task_id]),
    ]
    body = operator.get("/schedulers/").content.decode()
    assert f"run now: enqueued {task_id}" in body and "by hand" in body


def test_pausing_a_paused_entry_says_so_and_changes_nothing(operator, fired, redis_client):
    entry, _ = fired
    operator.post(f"/schedulers/{entry.id}/pause/")
    before = keys(redis_client)
    response = operator.post(f"/schedulers/{entry.id}/pause/", follow=True)
    assert "is paused already; nothing changed" in response.content.decode()
    assert keys(redis_client) == before and len(audit()) == 1


@pytest.mark.parametrize("action", ["run", "pause", "resume"])
def test_an_unknown_entry_is_a_404_page_that_changes_nothing(operator, fired, redis_client, action):
    before = keys(redis_client)
    response = operator.post(f"/schedulers/{'x' * 300}/{action}/")
    assert response.status_code == 404
    assert "no periodic entry" in response.content.decode()
    assert keys(redis_client) == before and audit() == []


@pytest.mark.parametrize("action", ["run", "pause", "resume"])
def test_only_operators_act_with_post_and_csrf(fired, redis_client, settings, action):
    entry, _ = fired
    url = f"/schedulers/{entry.id}/{action}/"
    before = keys(redis_client)
    assert Client().post(url).status_code == 302  # to the login page
    assert logged_in(make_user("vera", "view_console")).post(url).status_code == 403
    assert logged_in(make_user("olga", "operate_console")).get(url).status_code == 405
    assert logged_in(make_user("otto", "operate_console"), enforce_csrf_checks=True).post(url).status_code == 403
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert logged_in(make_user("rita", "operate_console")).post(url).status_code == 403
    assert keys(redis_client) == before and audit() == []


def test_the_page_shows_next_runs_and_a_sparkline_of_outcomes_and_actions_to_operators_only(operator, fired, redis_url):
    entry, start = fired
    broker = Broker(redis_url)
    ops = broker.transitions
    (leased,) = broker.run(ops.dequeue("low", 1, 60, "w1", "tok-"))
    broker.run(ops.archive("low", leased.id, leased.token, "boom", worker="w1", started=broker.clock.now() - 1))
    broker.close()
    body = operator.get("/schedulers/").content.decode()
    (upcoming,) = re.findall(r'<ol class="upcoming">(.*?)</ol>', body, re.S)
    assert upcoming.count("<li") == 5
    (spark,) = re.findall(r'<svg class="sparkline".*?</svg>', body, re.S)
    assert 'aria-label="latest 2 runs: 1 enqueued, 1 archived"' in spark
    assert re.findall(r'<rect class="(c-\w+)"', spark) == ["c-archived", "c-pending"]  # oldest first
    assert "archived" in body and "Run now" in body and "Pause" in body
    viewer = logged_in(make_user("vera", "view_console")).get("/schedulers/").content.decode()
    assert "Run now" not in viewer and f"/schedulers/{entry.id}/pause/" not in viewer
    assert '<svg class="sparkline"' in viewer
