"""Definitions and policies are mirrored into Redis on save and delete; the Django-free clients apply the unique
and retention defaults (explicit arguments win); the archive follows each queue's limits."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.core.management import call_command

from taskq.queues.engine import AsyncClient, DuplicateTaskError, Keys, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicyCache, PolicySet, PolicyStore, QueueSpec, RetentionRule
from taskq.queues.engine.transitions import ArchiveLimits
from taskq.queues.models import QueueDefinition, RetentionPolicy, UniquePolicy

KEYS = Keys()
pytestmark = pytest.mark.django_db


def test_saving_and_deleting_mirrors_the_whole_set(r, mirror):
    definition = mirror(lambda: QueueDefinition.objects.create(name="critical", weight=6, rank=1, concurrency_cap=3))
    mirror(lambda: UniquePolicy.objects.create(type_pattern="invoice:", ttl=600))
    mirror(lambda: RetentionPolicy.objects.create(queue="critical", archive_max_size=5))
    assert int(r.get(KEYS.config_version)) == 3
    assert json.loads(r.hget(KEYS.config_queues, "critical")) == {"weight": 6, "rank": 1, "cap": 3}
    assert float(r.hget(KEYS.config_unique, "invoice:")) == 600.0
    assert json.loads(r.hget(KEYS.config_retention, json.dumps(["critical", ""]))) == {
        "retention": None,
        "archive_max_size": 5,
        "archive_max_age": None,
    }

    definition.weight = 2
    mirror(definition.save)
    assert json.loads(r.hget(KEYS.config_queues, "critical"))["weight"] == 2
    mirror(definition.delete)
    assert not r.exists(KEYS.config_queues)
    assert int(r.get(KEYS.config_version)) == 5


def test_nothing_is_mirrored_before_the_transaction_commits(r, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        QueueDefinition.objects.create(name="later")
    assert len(callbacks) == 1 and not r.exists(KEYS.config_queues)


def test_sync_command_pushes_the_database_state(r, capsys):
    QueueDefinition.objects.create(name="low", weight=1)  # no commit in a test: nothing mirrored yet
    assert not r.exists(KEYS.config_queues)
    call_command("tasks_sync_policies")
    assert r.hexists(KEYS.config_queues, "low")
    assert "1 queue definition(s)" in capsys.readouterr().out


def test_policy_lookups():
    policies = PolicySet(
        unique={"email:": 60.0, "email:bulk": 5.0},
        retention=(
            RetentionRule(retention=10.0, archive_max_size=100, archive_max_age=1000.0),
            RetentionRule(type_prefix="report:", retention=20.0),
            RetentionRule(queue="q", retention=30.0, archive_max_size=7),
            RetentionRule(queue="q", type_prefix="report:daily", retention=40.0),
        ),
    )
    assert policies.unique_ttl("email:bulk:x") == 5.0 and policies.unique_ttl("email:one") == 60.0
    assert policies.unique_ttl("sms") is None
    assert policies.completed_retention("q", "report:daily") == 40.0  # queue + type
    assert policies.completed_retention("q", "report:weekly") == 30.0  # queue beats type
    assert policies.completed_retention("other", "report:weekly") == 20.0  # type
    assert policies.completed_retention("other", "sms") == 10.0  # default
    assert policies.archive_limits("q") == ArchiveLimits(7, 1000.0)  # size from the queue, age inherited
    assert policies.archive_limits("other") == ArchiveLimits(100, 1000.0)
    assert PolicySet().archive_limits("q") == ArchiveLimits(None, None)


def test_client_applies_policy_defaults_and_explicit_arguments_win(r, client, mirror):
    mirror(lambda: UniquePolicy.objects.create(type_pattern="invoice:", ttl=600))
    mirror(lambda: RetentionPolicy.objects.create(completed_retention=3600))
    mirror(lambda: RetentionPolicy.objects.create(queue="fast", type_pattern="invoice:", completed_retention=5))

    info = client.enqueue("invoice:send", {"id": 1})
    assert info.unique_key and 0 < r.pttl(info.unique_key) <= 600_000
    assert info.retention == 3600
    with pytest.raises(DuplicateTaskError):
        client.enqueue("invoice:send", {"id": 1})
    assert client.enqueue("invoice:send", {"id": 1}, queue="fast").retention == 5

    explicit = client.enqueue("invoice:send", {"id": 2}, unique=30, retention=0)
    assert 0 < r.pttl(explicit.unique_key) <= 30_000 and explicit.retention == 0
    other = client.enqueue("sms:send", {})
    assert other.unique_key is None and other.retention == 3600

    many = client.enqueue_many([("invoice:send", {"id": 3}), ("sms:send", {}), {"type": "invoice:x", "retention": 7}])
    assert [m.unique_key is not None for m in many] == [True, False, True]
    assert [m.retention for m in many] == [3600, 3600, 7]


def test_handler_defaults_are_explicit_arguments(r, client, mirror):
    mirror(lambda: RetentionPolicy.objects.create(completed_retention=3600))
    from taskq.queues.engine import Registry

    deliver = handler("email:deliver", registry=Registry(), retention=10)(lambda task: None)
    assert deliver.enqueue({}, client=client).retention == 10


def test_async_client_applies_policy_defaults(r, redis_url, mirror):
    mirror(lambda: UniquePolicy.objects.create(type_pattern="invoice:", ttl=600))
    mirror(lambda: RetentionPolicy.objects.create(queue="billing", completed_retention=120))

    async def scenario():
        async with AsyncClient(redis_url, policy_refresh=0.0) as aclient:
            first = await aclient.enqueue("invoice:send", {"id": 1}, queue="billing")
            with pytest.raises(DuplicateTaskError):
                await aclient.enqueue("invoice:send", {"id": 1}, queue="billing")
            explicit = await aclient.enqueue("invoice:send", {"id": 9}, queue="billing", retention=1, unique=5)
            many = await aclient.enqueue_many([("invoice:a", 1), ("x", 2)], queue="billing")
            return first, explicit, many

    first, explicit, many = asyncio.run(scenario())
    assert first.unique_key and first.retention == 120
    assert explicit.retention == 1 and 0 < r.pttl(explicit.unique_key) <= 5_000
    assert [m.unique_key is not None for m in many] == [True, False] and [m.retention for m in many] == [120, 120]


def test_the_cache_checks_the_version_at_most_once_per_interval(r, redis_url):
    ticks = [0.0]
    cache = PolicyCache(KEYS, refresh=1.0, monotonic=lambda: ticks[0])
    broker = Broker(redis_url)
    store = PolicyStore(broker)
    try:
        assert cache.get(broker).version == 0
        store.write(PolicySet(unique={"a": 5.0}))
        ticks[0] = 0.5
        assert cache.get(broker).unique == {}  # not checked yet
        ticks[0] = 1.1
        fresh = cache.get(broker)
        assert fresh.unique == {"a": 5.0} and fresh.version == 1
        r.flushdb()  # the config is gone (a flushed Redis): back to no policies
        ticks[0] = 2.2
        assert cache.get(broker) == PolicySet()
    finally:
        broker.close()


def test_a_bad_entry_is_skipped_not_fatal(r, redis_url):
    r.hset(KEYS.config_queues, mapping={"ok": json.dumps({"weight": 2}), "bad": "{nope"})
    r.hset(KEYS.config_unique, mapping={"x": "soon"})
    r.set(KEYS.config_version, 1)
    broker = Broker(redis_url)
    try:
        policies = PolicyStore(broker).read()
    finally:
        broker.close()
    assert policies.queues == {"ok": QueueSpec("ok", 2)} and policies.unique == {}


def test_operator_archive_follows_the_queue_limits(r, client, inspector, mirror):
    mirror(lambda: RetentionPolicy.objects.create(queue="small", archive_max_size=2))
    ids = [client.enqueue("t", {"n": n}, queue="small").id for n in range(4)]
    others = [client.enqueue("t", {"n": n}, queue="big").id for n in range(4)]
    for task_id in ids:
        inspector.archive_task("small", task_id)
    for task_id in others:
        inspector.archive_task("big", task_id)
    assert inspector.queue_info("small").archived == 2  # trimmed to the queue's own limit
    assert inspector.queue_info("big").archived == 4  # the engine-wide 10,000
    for n in range(4):
        client.enqueue("t", {"m": n}, queue="small")
    assert inspector.archive_all("small", "pending") == 4
    assert inspector.queue_info("small").archived == 2
