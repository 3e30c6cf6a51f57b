"""The RQ bridge under TASKS_REDACT (issue 22): a job's arguments, keyword arguments, return value, meta and
traceback are masked as taskq's payloads are (keys at any depth, the job's function as the task type), and a job
whose arguments are nested ten thousand deep still shows its page."""

from __future__ import annotations

import struct
import zlib

import pytest
from django.test import Client

from taskq.queues.engine.redaction import MASK, TOO_DEEP

pytestmark = pytest.mark.django_db

PASSWORD = "RQ-SECRET-pw"


@pytest.fixture
def redact(settings):
    settings.TASKS_REDACT = {"types": [], "keys": ["password", "card", "token"]}
    return settings


def page(client: Client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_arguments_result_meta_and_traceback_are_masked(client, users, rq_queue, rq_worker, redact):
    from taskq.console.rq import bridge

    queue = rq_queue()
    failed = queue.enqueue("rq_jobs.login", "ada", password=PASSWORD, meta={"auth": {"Token": PASSWORD + "-meta"}})
    finished = queue.enqueue("rq_jobs.session", "ada", password=PASSWORD)
    rq_worker("default")

    detail = bridge.rq_job("default", failed.id)
    assert "login refused for ada" in detail.exc_string and PASSWORD not in detail.exc_string
    assert MASK in detail.exc_string and PASSWORD not in detail.meta and MASK in detail.meta
    assert detail.description == f"rq_jobs.login('ada', password='{MASK}')"
    result = bridge.rq_job("default", finished.id).return_value
    assert PASSWORD not in result and "'scope': 'all'" in result and f"'token': '{MASK}'" in result
    for registry in ("failed", "finished"):
        body = page(client, users["viewer"], f"/rq/default/?registry={registry}")
        assert PASSWORD not in body and "rq_jobs." in body
    for job in (failed, finished):
        assert PASSWORD not in page(client, users["viewer"], f"/rq/default/jobs/{job.id}/")


def test_the_job_function_plays_the_task_type(client, users, rq_queue, rq_worker, settings):
    from taskq.console.rq import bridge

    settings.TASKS_REDACT = {"types": ["rq_jobs.log"], "keys": []}
    job = rq_queue().enqueue("rq_jobs.login", "ada", password=PASSWORD, description="login of ada")
    rq_worker("default")
    detail = bridge.rq_job("default", job.id)
    assert (detail.exc_string, detail.description, detail.func_name) == (MASK, MASK, "rq_jobs.login")
    assert bridge.rq_jobs("default", "failed").jobs[0].description == MASK
    assert PASSWORD not in page(client, users["viewer"], f"/rq/default/jobs/{job.id}/")


def nested_job_data(func_name: str, levels: int) -> bytes:
    """RQ's job data, ``(func_name, None, (deep,), {})`` pickled, with ``deep`` a list nested ``levels`` deep:
    written opcode by opcode, since pickle.dumps itself recurses per level."""
    name = func_name.encode()
    body = b"]" * levels + b"a" * (levels - 1)  # EMPTY_LIST per level, then APPEND each into the one below
    pickled = b"\x80\x02(X" + struct.pack("<I", len(name)) + name + b"N" + body + b"\x85}t."
    return zlib.compress(pickled)


def test_arguments_nested_ten_thousand_deep_do_not_break_the_pages(client, users, rq_queue, rq_redis, redact):
    queue = rq_queue()
    job = queue.enqueue("rq_jobs.add", 1, 2)
    rq_redis.hset(job.key, "data", nested_job_data("rq_jobs.add", 10_000))
    body = page(client, users["viewer"], f"/rq/default/jobs/{job.id}/")
    assert f"rq_jobs.add({TOO_DEEP})" in body
    body = page(client, users["viewer"], "/rq/default/")
    assert job.id in body and f"rq_jobs.add({TOO_DEEP})" in body
