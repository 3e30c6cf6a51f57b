"""The engine as Django code uses it: enqueue on commit, the default client, connection URLs."""

from __future__ import annotations

import logging
import uuid

import pytest
import redis

from taskq.queues.engine import (
    Client,
    RedisUnavailableError,
    Registry,
    ValidationError,
    connect,
    handler,
    warn_if_evicting,
)
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.keys import Keys
from taskq.queues.transaction import enqueue_on_commit


@pytest.fixture
def engine(settings_redis, redis_client):
    return redis_client


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_waits_for_the_commit(engine):
    from django.db import transaction

    with transaction.atomic():
        task_id = enqueue_on_commit("email:deliver", {"to": "ada@example.com"}, queue="critical")
        assert not engine.exists(Keys().queue("critical").task(task_id)), "enqueued before the commit"
    assert engine.hget(Keys().queue("critical").task(task_id), "state") == b"pending"


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_drops_the_task_on_rollback(engine):
    from django.db import transaction

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback):
        with transaction.atomic():
            task_id = enqueue_on_commit("email:deliver", {"to": "x"})
            raise Rollback
    assert not engine.exists(Keys().queue("default").task(task_id))
    assert engine.dbsize() == 0


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_validates_inside_the_request(engine):
    from django.db import transaction

    with transaction.atomic():
        with pytest.raises(ValidationError, match="queue name"):
            enqueue_on_commit("email:deliver", {}, queue="")
    assert engine.dbsize() == 0


def test_handler_enqueue_uses_its_defaults_under_overrides(settings_redis, redis_client):
    from taskq.queues.conf import get_client

    registry = Registry()

    @handler("report:build", queue="low", max_retry=2, retention=60, registry=registry)
    def build(task):  # pragma: no cover - never run here
        pass

    info = build.enqueue({"day": 1}, client=get_client(), max_retry=7)
    assert (info.queue, info.max_retry, info.retention) == ("low", 7, 60.0)
    assert redis_client.llen(Keys().queue("low").pending) == 1


def test_acl_user_and_password_in_the_url(redis_url, redis_client):
    """redis://user:password@host/db works; the user is made for this test and removed after it."""
    admin = redis.Redis.from_url(redis_url)
    user, password = f"tq-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin.acl_setuser(user, enabled=True, passwords=[f"+{password}"], keys=["*"], channels=["*"], commands=["+@all"])
    try:
        host_part = redis_url.split("://", 1)[1]
        client = Client(f"redis://{user}:{password}@{host_part}")
        info = client.enqueue("acl:check", b"x")
        assert redis_client.hget(Keys().queue("default").task(info.id), "type") == b"acl:check"
        with pytest.raises(RedisUnavailableError):
            Client(f"redis://{user}:wrong@{host_part}").enqueue("acl:check", b"x")
    finally:
        admin.acl_deluser(user)


def test_an_unreachable_redis_is_a_named_error():
    with pytest.raises(RedisUnavailableError, match="client.enqueue|unreachable"):
        Client("redis://127.0.0.1:1/0").enqueue("x", b"")


def test_tls_urls_make_tls_connections():
    conn = connect("rediss://127.0.0.1:6380/0")
    assert conn.connection_pool.connection_class.__name__ == "SSLConnection"


def test_eviction_policy_warning(redis_client, caplog):
    policy = redis_client.config_get("maxmemory-policy")["maxmemory-policy"]
    try:
        redis_client.config_set("maxmemory-policy", "allkeys-lru")
        with caplog.at_level(logging.WARNING, logger="taskq.queues.engine"):
            assert warn_if_evicting(Broker(conn=redis_client)) == "allkeys-lru"
        assert "tasks will be lost" in caplog.text
    finally:
        redis_client.config_set("maxmemory-policy", policy)
