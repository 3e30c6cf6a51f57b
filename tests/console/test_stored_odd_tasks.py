"""Pages never answer 500 on what a task holds in Redis, whatever wrote it: a task seeded straight into Redis
(bypassing every check, as an older version or another client might have left it) with odd headers, a type or
error that is not UTF-8, JSON holding lone surrogates, or options nobody can read renders on its console page, in
its queue's listing, in the run-again form, over the API and in ``tasks task inspect``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from console_support import logged_in, make_user
from django.test import Client as DjangoClient
from django.urls import reverse

from taskq.queues import conf
from taskq.queues.api.tokens import create_token
from tests.cli.helpers import invoke

pytestmark = pytest.mark.django_db

#: (hash field, raw bytes stored, or a change to the task's options document).
ODD: list[Any] = [
    pytest.param("msg", None, {"headers": {"h": "\ud800"}}, id="header-surrogate"),
    pytest.param("msg", None, {"headers": {"\udcff": "v"}}, id="header-name-surrogate"),
    pytest.param("msg", None, {"headers": {"c": "\x00\x1b[31mred\u202e"}}, id="header-controls"),
    pytest.param("msg", None, {"headers": {"n": 5, "l": [1, {"x": None}], "b": True}}, id="header-odd-types"),
    pytest.param("msg", None, {"headers": ["a", "b"]}, id="headers-a-list"),
    pytest.param("msg", None, {"headers": "text"}, id="headers-a-string"),
    pytest.param("msg", b'{"v":1,"timeout":"soon","headers":{"a":"\\ud800"}}', None, id="options-unreadable"),
    pytest.param("msg", b"[" * 3000, None, id="options-too-deep"),
    pytest.param("type", b"\xff\xfe", None, id="type-not-utf8"),
    pytest.param("type", b"a\x00\x1b[2Jb", None, id="type-controls"),
    pytest.param("payload", b'{"a":"\\ud800","\\udcff":1}', None, id="payload-surrogates"),
    pytest.param("payload", b"\xff\xfe\x00", None, id="payload-bytes"),
    pytest.param("error", b"boom \xed\xa0\x80 \xff", None, id="error-not-utf8"),
    pytest.param("result", b'"\\ud800"', None, id="result-surrogate"),
]


@pytest.fixture
def stored(engine, redis_client):
    """Enqueue a retry-able task normally, then rewrite one field of its hash straight in Redis."""

    def store(field: str, raw: bytes | None, change: dict[str, Any] | None) -> str:
        info = conf.get_client().enqueue("email", {"a": 1}, queue="q", headers={"h": "v"})
        key = f"tq:{{q}}:t:{info.id}"
        if change is not None:
            doc = json.loads(redis_client.hget(key, "msg"))
            raw = json.dumps({**doc, **change}).encode()  # json.dumps writes a lone surrogate as \\ud800
        redis_client.hset(key, field, raw)
        return info.id

    return store


@pytest.mark.parametrize(("field", "raw", "change"), ODD)
def test_a_task_with_odd_stored_fields_renders_everywhere(stored, field, raw, change):
    task_id = stored(field, raw, change)
    console = logged_in(make_user("vera", "view_console", "create_task"), raise_request_exception=False)
    page = console.get(reverse("taskq:task", args=["q", task_id]))
    assert page.status_code == 200, page.content[:500]
    page.content.decode("utf-8")  # what was sent is UTF-8 through and through
    assert console.get(reverse("taskq:queue", args=["q"]) + "?state=pending").status_code == 200
    assert console.get(reverse("taskq:task-again", args=["q", task_id])).status_code == 200  # the form shows it all
    token = create_token("all", ["*"])[1]
    api = DjangoClient(raise_request_exception=False)
    got = api.get(f"/api/v1/queues/q/tasks/{task_id}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert got.status_code == 200 and got.json()["id"] == task_id, got.content[:500]
    result = invoke("task", "inspect", task_id, "--queue", "q")
    assert result.code == 0 and task_id in result.out, result.err


def test_a_stored_surrogate_header_is_shown_replaced(stored, viewer_client):
    task_id = stored("msg", None, {"headers": {"h": "ab\ud800cd"}})
    page = viewer_client.get(reverse("taskq:task", args=["q", task_id])).content.decode()
    assert "ab\ufffdcd" in page
