"""With ``TASKS_KEY_FORMAT = "asynq"``, what writes taskq's own keys refuses, named, and writes nothing into the
asynq Redis; the system check says when the Redis does not look like an asynq deployment's."""

from __future__ import annotations

import base64
import io
import json

import pytest
import redis
from django.core import checks
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client as DjangoClient
from django.urls import reverse

from taskq.queues import conf
from taskq.queues.api.tokens import create_token
from taskq.queues.engine.asynq.keys import ALL_QUEUES
from taskq.queues.engine.errors import FormatUnsupportedError
from taskq.queues.key_format_checks import check_key_format
from taskq.queues.models import QueueDefinition
from tests.console.console_support import logged_in, make_user, redis_snapshot


@pytest.fixture
def asynq_redis(settings_redis, r: redis.Redis, go):
    """The test database holding what Go's client wrote, and the settings saying it is asynq's."""
    go.enqueue({"type": "email:send", "payload": base64.b64encode(b"hi").decode(), "queue": "mail", "task_id": "a1"})
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    return r


def _ids(messages: list[checks.CheckMessage]) -> list[str]:
    return sorted(m.id or "" for m in messages)


def test_the_shared_client_refuses_named_and_writes_nothing(asynq_redis: redis.Redis) -> None:
    before = redis_snapshot(asynq_redis)
    with pytest.raises(FormatUnsupportedError, match="taskq's Client writes taskq's own keys") as refused:
        conf.get_client()
    assert refused.value.code == "unsupported_by_format"
    assert redis_snapshot(asynq_redis) == before


def test_the_http_api_refuses_publish_and_consume_with_501(asynq_redis: redis.Redis, db) -> None:
    secret = create_token("asynq-test", ["*"])[1]
    api = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
    before = redis_snapshot(asynq_redis)
    published = api.post(
        reverse("taskq:api:publish", args=["mail"]), json.dumps({"type": "x", "payload": {}}), "application/json"
    )
    consumed = api.post(reverse("taskq:api:consume"), json.dumps({"queues": ["mail"]}), "application/json")
    for response in (published, consumed):
        assert response.status_code == 501, response.content
        assert response.json()["error"] == "unsupported_by_format"
        assert 'TASKS_KEY_FORMAT = "asynq"' in response.json()["message"]
    assert redis_snapshot(asynq_redis) == before


def test_admin_saves_mirror_nothing_into_the_asynq_redis(
    asynq_redis: redis.Redis, db, django_capture_on_commit_callbacks
) -> None:
    before = redis_snapshot(asynq_redis)
    with django_capture_on_commit_callbacks(execute=True):
        QueueDefinition.objects.create(name="mail", weight=2)
    assert QueueDefinition.objects.filter(name="mail").exists()  # the save stands
    assert redis_snapshot(asynq_redis) == before
    with pytest.raises(CommandError, match='TASKS_KEY_FORMAT = "asynq"'):
        call_command("tasks_sync_policies")
    assert redis_snapshot(asynq_redis) == before


def test_the_analytics_job_refuses(asynq_redis: redis.Redis) -> None:
    with pytest.raises(CommandError, match="event stream"):
        call_command("task_analytics")


def test_console_writes_refuse_with_a_page_and_change_nothing(asynq_redis: redis.Redis, db) -> None:
    operator = logged_in(make_user("otto", "view_console", "operate_console"))
    before = redis_snapshot(asynq_redis)
    response = operator.post(reverse("taskq:history-run"))
    assert response.status_code == 409
    assert b"Not in asynq&#x27;s format" in response.content or b"Not in asynq's format" in response.content
    assert redis_snapshot(asynq_redis) == before


def test_check_is_quiet_on_an_asynq_redis(asynq_redis: redis.Redis) -> None:
    assert asynq_redis.exists(ALL_QUEUES)
    assert check_key_format() == []


def test_check_warns_of_a_redis_without_asynq_keys(settings_redis, r: redis.Redis) -> None:
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    found = check_key_format()
    assert _ids(found) == ["taskq.W106"]
    assert "asynq:queues" in found[0].msg


def test_check_warns_of_taskq_keys_in_the_asynq_redis(asynq_redis: redis.Redis, settings_redis) -> None:
    asynq_redis.sadd(f"{conf.taskq_settings().key_prefix}:queues", "mail")
    found = check_key_format()
    assert _ids(found) == ["taskq.W107"]
    assert "tq:queues" in found[0].msg


def test_check_reads_nothing_in_taskq_format(settings_redis, r: redis.Redis) -> None:
    assert check_key_format() == []  # an empty Redis, and no asynq key: not asked in taskq's own format


def test_check_warns_when_redis_does_not_answer(redis_down) -> None:
    redis_down.TASKS_KEY_FORMAT = "asynq"
    assert _ids(check_key_format()) == ["taskq.W108"]


def test_the_cli_refuses_migrate_keys(asynq_redis: redis.Redis) -> None:
    before = redis_snapshot(asynq_redis)
    stderr = io.StringIO()
    with pytest.raises(CommandError):
        call_command("tasks", "migrate-keys", stdout=io.StringIO(), stderr=stderr)
    assert "tasks migrate-keys writes taskq's own keys" in stderr.getvalue()
    assert redis_snapshot(asynq_redis) == before
