"""``tasks task enqueue`` with ``TASKS_KEY_FORMAT = "asynq"`` writes asynq's keys through ``AsynqClient``, which
Go's Inspector reads back; with taskq's format it still writes taskq's."""

from __future__ import annotations

import base64

import pytest
import redis

from taskq.queues import handles
from taskq.queues.engine.asynq.keys import ALL_QUEUES, AsynqQueueKeys
from taskq.queues.engine.asynq.wire import WireTask
from tests.cli.helpers import invoke
from tests.engine.dbstate import dump

PAYLOAD = b"\x00raw bytes\xff"


@pytest.fixture
def asynq_cli(settings, redis_url: str, r: redis.Redis):
    settings.REDIS_URL = redis_url
    settings.TASKS_KEY_FORMAT = "asynq"
    handles.reset()  # the shared clients are keyed by URL: a fresh one for the flushed database
    yield invoke
    handles.reset()


def test_enqueue_writes_asynqs_keys_that_go_reads(asynq_cli, go, r: redis.Redis) -> None:
    argv = ["task", "enqueue", "email:send", "--payload-base64", base64.b64encode(PAYLOAD).decode()]
    options = ["--queue", "mail", "--id", "c1", "--max-retry", "2", "--timeout", "60", "--unique", "120"]
    doc = asynq_cli("--json", *argv, *options, "--retention", "30").json()
    assert (doc["id"], doc["queue"], doc["state"], doc["max_retry"]) == ("c1", "mail", "pending", 2)
    assert all(key.startswith(b"asynq:") for key in r.keys())  # nothing of taskq's layout
    assert r.smembers(ALL_QUEUES) == {b"mail"}
    message = WireTask.decode(r.hget(AsynqQueueKeys("mail").task("c1"), "msg"))
    assert (message.payload, message.retry, message.timeout, message.retention) == (PAYLOAD, 2, 60, 30)
    assert r.get(AsynqQueueKeys("mail").unique("email:send", PAYLOAD)) == b"c1"
    back = go("task", "mail", "c1")
    assert (back["type"], base64.b64decode(back["payload"]), back["state"]) == ("email:send", PAYLOAD, "pending")
    assert (back["max_retry"], back["timeout_seconds"], back["retention_seconds"]) == (2, 60, 30)

    before = dump(r)
    again = asynq_cli(*argv, *options[:2], "--unique", "120")
    assert again.code == 1 and "with the same payload is already in queue" in again.err
    assert dump(r) == before
    scheduled = asynq_cli("--json", "task", "enqueue", "report", "--payload", '{"n": 1}', "--process-in", "60").json()
    assert (scheduled["state"], scheduled["queue"]) == ("scheduled", "default")
    assert go("task", "default", scheduled["id"])["state"] == "scheduled"


def test_enqueue_still_writes_taskqs_keys_in_taskqs_format(settings, redis_url: str, r: redis.Redis) -> None:
    settings.REDIS_URL = redis_url
    handles.reset()
    doc = invoke("--json", "task", "enqueue", "email:send", "--payload", "{}").json()
    assert doc["state"] == "pending"
    assert not [key for key in r.keys() if key.startswith(b"asynq:")]
    handles.reset()
