"""The console's History page over TaskDailyRollup rows: access rule, filters, charts, bad input."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client as WebClient

from taskq.queues.history.models import TaskDailyRollup

pytestmark = pytest.mark.django_db


@pytest.fixture
def web():
    return WebClient()


@pytest.fixture
def rollups():
    for day, queue, ttype, ok, bad in (
        (date(2026, 11, 20), "default", "email", 90, 10),
        (date(2026, 11, 21), "default", "email", 80, 20),
        (date(2026, 11, 21), "low", "report:<daily>", 5, 0),
    ):
        TaskDailyRollup.objects.create(
            day=day,
            queue=queue,
            task_type=ttype,
            enqueued=ok + bad,
            started=ok + bad,
            succeeded=ok,
            failed=bad,
            failure_rate=bad / (ok + bad),
            wait_p50_ms=12,
            wait_p95_ms=40,
            wait_p99_ms=90,
            run_p50_ms=300,
            run_p95_ms=900,
            run_p99_ms=1500,
        )


def login(web, *perms):
    user = User.objects.create_user("u", password="pw-history-1")
    for perm in perms:
        user.user_permissions.add(Permission.objects.get(codename=perm, content_type__app_label="taskq"))
    web.force_login(user)


def test_needs_login_and_the_view_permission(web):
    assert web.get("/history/").status_code == 302
    login(web)
    assert web.get("/history/").status_code == 403


def test_charts_and_filters(web, rollups):
    login(web, "view_console")
    page = web.get("/history/").content.decode()
    assert "<svg" in page and "2026-11-21" in page and "report:&lt;daily&gt;" in page
    only_low = web.get("/history/", {"queue": "low"}).content.decode()
    assert "report:&lt;daily&gt;" in only_low and ">email<" not in only_low
    only_email = web.get("/history/", {"type": "email", "days": "7"}).content.decode()
    assert ">email<" in only_email and "<td>low</td>" not in only_email


def test_rows_without_a_type_from_a_queues_pause_are_left_out(web, rollups):
    TaskDailyRollup.objects.create(day=date(2026, 11, 21), queue="low", task_type="", enqueued=0, started=0,
                                   succeeded=0, failed=0)  # fmt: skip
    login(web, "view_console")
    page = web.get("/history/").content.decode()
    type_filter = page.split('name="type"', 1)[1].split("</select>", 1)[0]
    assert type_filter.count('value=""') == 1 and "<td></td>" not in page  # "all" only: no blank type to default to
    assert ">(none)</text>" not in page


def test_bad_input_is_a_400_and_no_rollups_says_how_to_get_them(web):
    login(web, "view_console")
    assert web.get("/history/", {"days": "x"}).status_code == 400
    assert web.get("/history/", {"queue": "q" * 500}).status_code == 400
    assert "task_analytics" in web.get("/history/").content.decode()


def test_the_charts_have_legends_day_labels_and_every_figure_in_a_hover(web, rollups):
    login(web, "view_console")
    page = web.get("/history/").content.decode()
    assert page.count('<svg class="chart time" data-fit="wide"') == 3
    assert 'class="axis legend"' in page and ">succeeded</text>" in page and ">failed</text>" in page
    assert ">11-20</text>" in page and ">11-21</text>" in page and "2026-11-21 email" not in page  # no long labels
    assert "11-21 · succeeded: 85" in page and "11-21 · failed: 20" in page
    assert "11-20 · email: 900 ms" in page and "11-21 · report:&lt;daily&gt;: 40 ms" in page
    assert re.search(r'<div class="table-scroll"[^>]*><table class="data">', page)  # it scrolls inside its card


def test_operators_run_the_analytics_job_for_today_from_the_page(web, engine, redis_client):
    from taskq.queues.models import AuditLog

    login(web, "view_console")
    assert 'action="/history/run/"' not in web.get("/history/").content.decode()
    assert web.post("/history/run/").status_code == 403
    User.objects.get(username="u").user_permissions.add(
        Permission.objects.get(codename="operate_console", content_type__app_label="taskq")
    )
    assert 'action="/history/run/"' in web.get("/history/").content.decode()
    assert web.get("/history/run/").status_code == 405
    response = web.post("/history/run/", follow=True)
    assert "rollups were enqueued" in response.content.decode()
    [task] = engine.list_tasks("default", "pending")
    assert (task.type, task.json()) == ("analytics:daily", {"date": "today"})
    entry = AuditLog.objects.get()
    assert (entry.action, entry.task_ids) == ("run_analytics", [task.id])


def test_the_job_reads_today_and_yesterday_by_name():
    from datetime import UTC, datetime, timedelta

    from taskq.queues.history.tasks import days_of

    today = datetime.now(UTC).date()
    assert days_of({"date": "today"}) == [today.isoformat()]
    assert days_of({"date": "yesterday"}) == [(today - timedelta(days=1)).isoformat()]
