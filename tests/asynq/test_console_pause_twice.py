"""Pause or Resume pressed on a queue already in that state (a double click, two operators at once): asynq's
Inspector refuses it, so the console leaves the queue as it is, says so, and audits nothing, never a 500."""

from __future__ import annotations

import pytest
import redis
from django.contrib.messages import get_messages
from django.urls import reverse

from taskq.queues import handles
from taskq.queues.audit import AuditLog
from taskq.queues.engine.asynq import AsynqClient
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from tests.console.console_support import logged_in, make_user


@pytest.fixture
def operator(settings_redis, redis_url: str, r: redis.Redis, db):
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    with AsynqClient(redis_url) as producer:
        producer.enqueue("email:send", b"{}", queue="q")
    yield logged_in(make_user("otto", "view_console", "operate_console"))
    handles.reset()


@pytest.mark.parametrize("button", ["queue-pause", "queue-resume"])
def test_a_second_press_leaves_the_queue_and_says_so(operator, r: redis.Redis, button: str) -> None:
    if button == "queue-resume":
        operator.post(reverse("taskq:queue-pause", args=["q"]))
    first = operator.post(reverse(f"taskq:{button}", args=["q"]))
    paused_at = r.get(AsynqQueueKeys("q").paused)
    audited = AuditLog.objects.count()
    second = operator.post(reverse(f"taskq:{button}", args=["q"]))
    assert (first.status_code, second.status_code) == (302, 302)
    assert r.get(AsynqQueueKeys("q").paused) == paused_at  # unchanged, paused or not
    assert AuditLog.objects.count() == audited
    assert "left as it was" in [str(m) for m in get_messages(second.wsgi_request)][-1]
