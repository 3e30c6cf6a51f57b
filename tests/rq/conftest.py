"""Fixtures of the RQ tests: django-rq queues on the test Redis, a real ``rq worker`` subprocess, console users.

Jobs are enqueued through django-rq (``django_rq.get_queue``) with commit mode "auto": the tests run inside a
database transaction that never commits, and django-rq's default would hold every enqueue until the commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RQ_BIN = Path(sys.executable).parent / "rq"

QUEUES = ("default", "low", "reports/daily")
WORKER_TIMEOUT = 60.0


@pytest.fixture
def rq_redis(settings_redis, redis_client: redis.Redis, redis_url: str) -> redis.Redis:
    """The test database, flushed around the test, with RQ_QUEUES pointing every RQ queue at it."""
    settings_redis.RQ_QUEUES = {name: {"URL": redis_url} for name in QUEUES}
    settings_redis.RQ = {"COMMIT_MODE": "auto"}
    return redis_client


@pytest.fixture
def rq_queue(rq_redis):
    """``rq_queue(name="default")``: a django-rq queue on the test database."""
    import django_rq

    return lambda name="default": django_rq.get_queue(name)


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    # rq_jobs lives in tests/rq, which is not a package: the worker finds it on its path, like pytest does.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), str(REPO), env.get("PYTHONPATH", "")]))
    return env


@pytest.fixture
def rq_worker(rq_redis, redis_url: str) -> Iterator[Callable[..., subprocess.Popen]]:
    """``rq_worker(*queues, wait=True)`` runs a real ``rq worker --burst`` on the test Redis.

    With ``wait=True`` it returns once the worker has drained the queues and exited 0; with ``wait=False`` it
    returns the running process. Every process still running at teardown is killed.
    """
    started: list[subprocess.Popen] = []

    def run(*queues: str, wait: bool = True) -> subprocess.Popen:
        cmd = [
            str(RQ_BIN),
            "worker",
            "--url",
            redis_url,
            "--burst",
            "--disable-job-desc-logging",
            *(queues or ("default",)),
        ]
        proc = subprocess.Popen(cmd, cwd=REPO, env=_worker_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        started.append(proc)
        if wait:
            try:
                output, _ = proc.communicate(timeout=WORKER_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
                pytest.fail(f"rq worker did not finish in {WORKER_TIMEOUT:g} s:\n{output.decode(errors='replace')}")
            assert proc.returncode == 0, f"rq worker exited {proc.returncode}:\n{output.decode(errors='replace')}"
        return proc

    yield run
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# --- console users ------------------------------------------------------------------------------------------


def _permission(codename: str):
    """The console's permission ``queues.<codename>``, created here only if no migration has created it yet."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    existing = Permission.objects.filter(codename=codename, content_type__app_label="taskq").first()
    if existing is not None:
        return existing
    content_type, _ = ContentType.objects.get_or_create(app_label="taskq", model="console")
    return Permission.objects.create(codename=codename, name=codename, content_type=content_type)


@pytest.fixture
def make_user(db):
    """``make_user(name, *codenames)``: a user holding the given ``queues.*`` permissions."""
    from django.contrib.auth import get_user_model

    def make(name: str, *codenames: str):
        user = get_user_model().objects.create_user(name, password="pw-" + name)
        user.user_permissions.add(*(_permission(codename) for codename in codenames))
        return user

    return make


@pytest.fixture
def users(make_user) -> dict[str, object]:
    """One user per role: ``nobody`` (logged in, no permission), ``viewer``, ``operator``."""
    return {
        "nobody": make_user("nobody"),
        "viewer": make_user("viewer", "view_console"),
        "operator": make_user("operator", "view_console", "operate_console"),
    }
