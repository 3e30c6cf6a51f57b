"""The CLI's and the HTTP API's actions on asynq's keys do asynq's transitions and leave their record in the audit
log: asynq's keys carry no event stream, so the audit log is the one place that says which operator did what."""

from __future__ import annotations

import pytest
import redis
from django.test import Client as DjangoClient
from django.urls import reverse

from taskq.queues import handles
from taskq.queues.api.tokens import create_token
from taskq.queues.engine.asynq import AsynqClient
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.models import AuditLog
from tests.cli.helpers import invoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def asynq_cli(settings, redis_url: str, r: redis.Redis):
    settings.REDIS_URL = redis_url
    settings.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    yield invoke
    handles.reset()


def entries() -> list[tuple[str, str, list[str], str, int, bool]]:
    return [
        (a.action, a.queue, a.task_ids, a.detail, a.task_count, a.username.startswith("cli:"))
        for a in AuditLog.objects.order_by("id")
    ]


def test_each_cli_action_is_done_on_asynqs_keys_and_audited(asynq_cli, redis_url: str, r: redis.Redis) -> None:
    with AsynqClient(redis_url) as producer:
        for task_id in ("a", "b", "c"):
            producer.enqueue("email:send", b"{}", queue="mail", task_id=task_id, process_in=3600)
    keys = AsynqQueueKeys("mail")
    assert asynq_cli("queue", "pause", "mail").code == 0
    assert r.exists(keys.paused)
    assert asynq_cli("queue", "resume", "mail").code == 0
    assert asynq_cli("task", "run", "a", "--queue", "mail").code == 0
    assert r.lrange(keys.pending, 0, -1) == [b"a"]
    assert asynq_cli("task", "archive", "b", "--queue", "mail").code == 0
    assert asynq_cli("task", "deleteall", "--queue", "mail", "--state", "archived").code == 0
    assert not r.exists(keys.task("b"))
    assert entries() == [
        ("pause_queue", "mail", [], "", 0, True),
        ("resume_queue", "mail", [], "", 0, True),
        ("run_task", "mail", ["a"], "", 1, True),
        ("archive_task", "mail", ["b"], "", 1, True),
        ("delete_all", "mail", [], "state=archived", 1, True),
    ]
    assert not [key for key in r.keys() if not key.startswith(b"asynq:")]


def test_a_refused_action_changes_nothing_and_is_not_audited(asynq_cli, redis_url: str, r: redis.Redis) -> None:
    with AsynqClient(redis_url) as producer:
        producer.enqueue("email:send", b"{}", queue="mail", task_id="a")
    result = asynq_cli("task", "run", "a", "--queue", "mail")  # a pending task: asynq refuses to run it
    assert result.code == 1
    assert r.lrange(AsynqQueueKeys("mail").pending, 0, -1) == [b"a"]
    assert not AuditLog.objects.exists()


def test_the_apis_deletes_and_respawns_are_done_on_asynqs_keys_and_audited(
    asynq_cli, redis_url: str, r: redis.Redis
) -> None:
    with AsynqClient(redis_url) as producer:
        producer.enqueue("email:send", b"{}", queue="mail", task_id="a", process_in=3600)
        producer.enqueue("email:send", b"{}", queue="mail", task_id="b", process_in=3600)
    asynq_cli("task", "archive", "b", "--queue", "mail")
    AuditLog.objects.all().delete()
    api = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {create_token('ops', ['*'])[1]}")
    assert api.delete(reverse("taskq:api:task", args=["mail", "a"])).status_code == 204
    assert (
        api.post(reverse("taskq:api:dead-letter-respawn", args=["mail", "b"]), "{}", "application/json").status_code
        == 200
    )
    assert not r.exists(AsynqQueueKeys("mail").task("a"))
    assert r.lrange(AsynqQueueKeys("mail").pending, 0, -1) == [b"b"]
    assert [(a.action, a.task_ids, a.username) for a in AuditLog.objects.order_by("id")] == [
        ("delete_task", ["a"], "api:ops"),
        ("run_task", ["b"], "api:ops"),
    ]
