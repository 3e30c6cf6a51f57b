"""One poisoned payload never takes a page down (issue 22).

A payload nested 10,000 deep is refused at every way in, writing nothing. The same payload written straight into
Redis, as an older version or another client could, leaves every page, Search, the admin and the CLI answering
(it reads "too deeply nested to display"), with and without redaction configured, and the task can still be
retried, archived and deleted from the console.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from console_support import logged_in, make_user

from taskq.queues.engine import DEFAULT_PREFIX, AsyncClient, Client, PayloadTooDeepError, ValidationError, chain, sig
from taskq.queues.engine.keys import Keys
from taskq.queues.rendering import TOO_DEEP
from tests.cli.helpers import invoke

pytestmark = pytest.mark.django_db

DEPTH = 10_000
DEEP = "[" * DEPTH + "]" * DEPTH
SECRET = "deep-secret-pw"
#: A secret under a redacted key, inside a value too deep to walk: it must never show, masked or not.
DEEP_WITH_SECRET = '{"password":"' + SECRET + '","nest":' + DEEP + "}"


def deep_value() -> list:
    value: list = []
    for _ in range(DEPTH - 1):
        value = [value]
    return value


@pytest.fixture
def operator(db):
    return make_user("otto", "view_console", "operate_console", "edit_task", is_staff=True)


@pytest.fixture
def operator_client(operator):
    return logged_in(operator)


def task_key(task_id: str) -> str:
    return Keys(DEFAULT_PREFIX).queue("default").task(task_id)


def nothing_written(r) -> None:
    assert not [key for key in r.keys("*") if b":t:" in key or b"pending" in key], r.keys("*")


# -- refused at every way in ---------------------------------------------------------------------------------


def test_client_refuses_a_deep_payload_as_a_value_or_as_bytes(engine, redis_url, r):
    with Client(redis_url) as client:
        for payload in (deep_value(), DEEP.encode(), b"  \n" + DEEP.encode()):
            with pytest.raises(PayloadTooDeepError, match="nested deeper than 64 levels"):
                client.enqueue("deep:task", payload)
        with pytest.raises(ValidationError, match=r"item 1: payload is nested deeper than 64"):
            client.enqueue_many([("ok", {"a": 1}), ("deep:task", deep_value())])
        with pytest.raises(PayloadTooDeepError):
            client.enqueue("deep:task", deep_value(), group="g")
        with pytest.raises(ValidationError, match='member "deep:task": payload is nested deeper than 64'):
            client.submit(chain(sig("ok", {}), sig("deep:task", deep_value())))
    nothing_written(r)


def test_async_client_refuses_a_deep_payload(engine, redis_url, r):
    async def enqueue() -> None:
        client = AsyncClient(redis_url)
        try:
            with pytest.raises(PayloadTooDeepError):
                await client.enqueue("deep:task", deep_value())
            with pytest.raises(ValidationError, match="nested deeper"):
                await client.enqueue_many([("deep:task", DEEP.encode())])
        finally:
            await client.close()

    asyncio.run(enqueue())
    nothing_written(r)


def test_the_depth_limit_is_a_setting(engine, redis_url, r):
    shallow = [[[["four"]]]]
    with Client(redis_url, max_payload_depth=3) as client:
        with pytest.raises(PayloadTooDeepError, match="deeper than 3 levels"):
            client.enqueue("t", shallow)
    with Client(redis_url, max_payload_depth=4) as client:
        assert client.enqueue("t", shallow).state == "pending"
    with pytest.raises(ValidationError, match="max_payload_depth must be between 1 and 128"):
        Client(redis_url, max_payload_depth=1000)


def test_cli_enqueue_refuses_a_deep_payload(engine, r):
    result = invoke("task", "enqueue", "deep:task", "--payload", DEEP)
    assert result.code != 0 and "nested deeper than" in result.err and "RecursionError" not in result.err
    nested_65 = "[" * 65 + "]" * 65
    result = invoke("task", "enqueue", "deep:task", "--payload", nested_65)
    assert result.code != 0 and "nested deeper than 64" in result.err
    nothing_written(r)


def test_edit_form_refuses_a_deep_payload(operator_client, seed, r):
    task_id = seed.archived(task_type="deep:task", payload={"ok": 1})
    before = r.hgetall(task_key(task_id))
    for encoding, text in (("json", DEEP), ("text", DEEP)):
        response = operator_client.post(
            f"/queues/default/tasks/{task_id}/edit/", {"payload": text, "encoding": encoding, "queue": ""}
        )
        assert response.status_code == 400, response.status_code
        assert "nested deeper than 64 levels" in response.content.decode()
    assert r.hgetall(task_key(task_id)) == before


# -- already in Redis: every reader still answers --------------------------------------------------------------


@pytest.fixture(params=["plain", "redacted"])
def poisoned(request, settings, seed, r):
    """An archived, a retry and a completed task whose payloads (and the completed one's result) were overwritten
    in Redis with 10,000-deep JSON, beside a healthy task of the same type."""
    if request.param == "redacted":
        settings.TASKS_REDACT = {"types": [], "keys": ["password", "card", "token"]}
    ids = {
        "archived": seed.archived(task_type="deep:task"),
        "retry": seed.retry(task_type="deep:task"),
        "completed": seed.completed(task_type="deep:task", result=DEEP_WITH_SECRET.encode()),
        "healthy": seed.archived(task_type="deep:task", payload={"fine": "healthy-payload"}),
    }
    for name in ("archived", "retry", "completed"):
        r.hset(task_key(ids[name]), "payload", DEEP_WITH_SECRET)
    ids["redacted"] = request.param == "redacted"
    return ids


def get(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def test_every_page_search_and_the_admin_answer(operator_client, poisoned):
    pages = [
        "/",
        *(f"/queues/default/?state={state}" for state in ("pending", "retry", "archived", "completed")),
        "/queues/default/?state=archived&type=deep:task",
        "/queues/default/?state=archived&text=nest",
        "/queues/default/types/deep:task/",
        "/search/?q=deep",
        "/search/?q=type:deep:task",
        "/search/?q=payload.password:*",
        "/search/?q=payload.fine:healthy*",
        *(f"/queues/default/tasks/{poisoned[name]}/" for name in ("archived", "retry", "completed", "healthy")),
        *(f"/queues/default/tasks/{poisoned['completed']}/?full={field}" for field in ("payload", "result")),
        *(f"/admin/taskq/tasks/?queue=default&state={state}" for state in ("archived", "retry", "completed")),
    ]
    for url in pages:
        body = get(operator_client, url)
        # Without redaction a list's one-line preview shows the payload's first characters, as for any payload.
        assert not poisoned["redacted"] or SECRET not in body, url
    edit = operator_client.get(f"/queues/default/tasks/{poisoned['archived']}/edit/")
    # Masked whole under key rules (what it holds under a redacted key is unknown), so editing needs the permission.
    assert edit.status_code == (403 if poisoned["redacted"] else 200)
    task_page = get(operator_client, f"/queues/default/tasks/{poisoned['completed']}/")
    if poisoned["redacted"]:
        assert task_page.count("&quot;[redacted]&quot;") == 2  # payload and result, masked whole
        revealer = logged_in(make_user("ursula", "view_console", "view_unredacted"))
        task_page = get(revealer, f"/queues/default/tasks/{poisoned['completed']}/?unredacted=1")
    assert task_page.count(TOO_DEEP) == 2  # payload and result
    assert SECRET not in task_page
    listed = get(operator_client, "/queues/default/?state=archived")
    assert poisoned["archived"] in listed and poisoned["healthy"] in listed
    found = get(operator_client, "/search/?q=payload.fine:healthy*")
    assert poisoned["healthy"] in found and poisoned["archived"] not in found


def test_the_cli_lists_and_inspects_it(engine, poisoned):
    listed = invoke("task", "ls", "--queue", "default", "--state", "archived", "--json")
    ids = [task["id"] for task in listed.json()["tasks"]]
    assert poisoned["archived"] in ids and poisoned["healthy"] in ids
    assert not poisoned["redacted"] or SECRET not in listed.out
    for name in ("archived", "completed"):
        inspected = invoke("task", "inspect", poisoned[name], "--queue", "default")
        assert inspected.code == 0, inspected.err
        assert not poisoned["redacted"] or SECRET not in inspected.out
    both = invoke("task", "inspect", poisoned["archived"], "--queue", "default", "--json")
    assert json.loads(both.out)["id"] == poisoned["archived"]


def test_it_can_be_retried_archived_and_deleted_from_the_console(operator_client, poisoned, r):
    def act(action: str, task_id: str) -> None:
        response = operator_client.post("/queues/default/batch/", {"action": action, "task_ids": task_id})
        assert response.status_code == 302, response.status_code

    act("archive", poisoned["retry"])
    assert r.hget(task_key(poisoned["retry"]), "state") == b"archived"
    act("run", poisoned["archived"])
    assert r.hget(task_key(poisoned["archived"]), "state") == b"pending"
    for name in ("archived", "retry", "completed"):
        act("delete", poisoned[name])
        assert not r.exists(task_key(poisoned[name]))
    assert r.exists(task_key(poisoned["healthy"]))


def test_the_admin_periodic_task_form_refuses_a_deep_payload(db, r):
    from taskq.queues.models import PeriodicTask

    root = logged_in(make_user("root", is_staff=True, is_superuser=True))
    form = {"name": "deep", "spec": "@hourly", "timezone": "UTC", "task_type": "deep:task", "queue": "default",
            "options": "{}", "missed": "skip", "enabled": "on"}  # fmt: skip
    for payload in (DEEP, "[" * 65 + "]" * 65):
        response = root.post("/admin/taskq/periodictask/add/", {**form, "payload": payload})
        assert response.status_code == 200  # the form again, with the error
        assert "nested deeper than 64 levels" in response.content.decode()
    assert not PeriodicTask.objects.exists()
    response = root.post("/admin/taskq/periodictask/add/", {**form, "payload": '{"fine": [[1]]}'})
    assert response.status_code == 302 and PeriodicTask.objects.get().payload == {"fine": [[1]]}


def test_the_admin_token_form_refuses_deep_json(db):
    from taskq.queues.models import ApiToken

    root = logged_in(make_user("root", is_staff=True, is_superuser=True))
    response = root.post("/admin/taskq/apitoken/add/", {"name": "deep", "queues": DEEP, "namespaces": "[]"})
    assert response.status_code == 200 and "nested deeper than 64 levels" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_live_task_frame_shows_a_deep_result_as_too_deep(engine, poisoned):
    from taskq.console.live.hub import task_detail

    frame = task_detail(engine, "default", poisoned["completed"], "completed")
    assert frame["state"] == "completed"
    if poisoned["redacted"]:  # masked whole before it is rendered, for every watcher
        assert frame["result"]["redacted"] and frame["result"]["text"] == '"[redacted]"'
    else:
        assert frame["result"]["kind"] == "deep" and frame["result"]["text"] == TOO_DEEP
    assert SECRET not in json.dumps(frame)
