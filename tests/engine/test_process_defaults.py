"""Where a ``Client()`` given no URL connects (``taskq.queues.engine.process_defaults``): the Redis the Django app
registers from its settings, else ``$REDIS_URL``, else the local Redis; the key prefix the same way.

Issue 24: a bare ``Client()`` always took ``redis://127.0.0.1:6379/0``, so in ``manage.py shell`` with ``REDIS_URL``
naming another database the README's examples wrote to database 0 while the console read the other one."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from taskq.queues import conf
from taskq.queues.engine import AsyncClient, Client, Inspector, Keys, process_defaults
from taskq.queues.engine.broker.connection import DEFAULT_REDIS_URL, database_of
from taskq.queues.engine.keys import DEFAULT_PREFIX

ROOT = Path(__file__).resolve().parents[2]
#: A Redis nobody should write to in these tests: nothing listens on port 1, so a client on it fails at once.
NOWHERE = "redis://127.0.0.1:1/5"


@pytest.fixture
def unregistered(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process default registered (the Django app of this test process registered one at start-up)."""
    monkeypatch.setattr(process_defaults, "_registered", None)


def test_the_environment_then_the_local_redis(unregistered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", NOWHERE)
    monkeypatch.setenv("TASKS_KEY_PREFIX", "envpfx")
    assert (process_defaults.redis_url(), process_defaults.key_prefix()) == (NOWHERE, "envpfx")
    monkeypatch.setenv("REDIS_URL", "")  # empty means unset, as in TaskqSettings.from_env
    monkeypatch.delenv("TASKS_KEY_PREFIX")
    assert (process_defaults.redis_url(), process_defaults.key_prefix()) == (DEFAULT_REDIS_URL, DEFAULT_PREFIX)


def test_a_malformed_setting_a_client_does_not_use_stops_no_client(
    unregistered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defaults read only REDIS_URL and TASKS_KEY_PREFIX: a bad TASKS_LEASE_SECONDS is the worker's to report."""
    monkeypatch.setenv("TASKS_LEASE_SECONDS", "soon")
    monkeypatch.setenv("TASKS_KEY_PREFIX", "envpfx")
    assert process_defaults.key_prefix() == "envpfx"
    with Client(NOWHERE, prefix="given") as client:
        assert client.broker.keys.prefix == "given"
    with Client(NOWHERE) as client:
        assert client.broker.keys.prefix == "envpfx"


def test_a_registered_default_wins_over_the_environment(unregistered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", NOWHERE)
    process_defaults.register("redis://127.0.0.1:6379/7", "regpfx")
    assert (process_defaults.redis_url(), process_defaults.key_prefix()) == ("redis://127.0.0.1:6379/7", "regpfx")
    with Client() as client:
        assert (database_of(client.broker.conn), client.broker.keys.prefix) == (7, "regpfx")
    with Client(NOWHERE, prefix="own") as client:  # what the caller names wins
        assert (database_of(client.broker.conn), client.broker.keys.prefix) == (5, "own")


def test_in_django_a_bare_client_writes_to_settings_redis_url(
    settings, redis_url: str, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app registers ``settings.REDIS_URL`` (and follows a change of it): a bare Client() and AsyncClient()
    write there, where the console's inspector reads, whatever ``$REDIS_URL`` says."""
    monkeypatch.setenv("REDIS_URL", NOWHERE)
    settings.REDIS_URL = redis_url
    settings.TASKS_KEY_PREFIX = "shell"
    # What the worker command and the console read (taskq.queues.conf) is what a bare client takes.
    assert (process_defaults.redis_url(), process_defaults.key_prefix()) == (
        conf.taskq_settings().redis_url,
        conf.taskq_settings().key_prefix,
    )
    db = int(redis_url.rsplit("/", 1)[1])
    with Client() as client:
        assert database_of(client.broker.conn) == db
        info = client.enqueue("report:daily", {"n": 1})

    async def enqueue_async() -> str:
        async with AsyncClient() as aclient:
            return (await aclient.enqueue("report:daily", {"n": 2})).id

    async_id = asyncio.run(enqueue_async())
    with Inspector(redis_url, prefix="shell") as inspector:
        assert inspector.get_task("default", info.id).json() == {"n": 1}
        assert inspector.get_task("default", async_id).json() == {"n": 2}
    assert r.exists(Keys("shell").queue("default").task(info.id))


def test_a_plain_process_uses_redis_url_from_its_environment(redis_url: str, r: redis.Redis) -> None:
    """No Django at all: a script's bare Client() and AsyncClient() take ``$REDIS_URL``."""
    script = (
        "import asyncio, sys\n"
        "from taskq.queues.engine import AsyncClient, Client\n"
        "from taskq.queues.engine.broker.connection import database_of\n"
        "assert 'django.conf' not in sys.modules\n"
        "client = Client()\n"
        "print(database_of(client.broker.conn), client.enqueue('plain:sync').id)\n"
        "async def main():\n"
        "    async with AsyncClient() as aclient:\n"
        "        return (await aclient.enqueue('plain:async')).id\n"
        "print(asyncio.run(main()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "TASKS_KEY_PREFIX")}
    env.update(REDIS_URL=redis_url, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    first, async_id = done.stdout.splitlines()
    db, sync_id = first.split()
    assert int(db) == int(redis_url.rsplit("/", 1)[1])
    queue = Keys().queue("default")
    assert {r.hget(queue.task(sync_id), "type"), r.hget(queue.task(async_id), "type")} == {
        b"plain:sync",
        b"plain:async",
    }
