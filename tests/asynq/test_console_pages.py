"""The console over a Go asynq deployment (``TASKS_KEY_FORMAT = "asynq"``): Go's client enqueues every option, and
the pages show each field as Go's Inspector reads it, the raw payload bytes included; every page answers each role
with its page, or the one-line explanation of what asynq's format cannot hold, and never a 500."""

from __future__ import annotations

import base64
import html
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from django.test import Client as DjangoClient
from django.urls import reverse

from taskq.console.templatetags.console_tags import duration
from taskq.queues import handles
from taskq.queues.api.tokens import create_token
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.key_format import ABSENT_ON_ASYNQ
from taskq.queues.periodic_sync import scheduler_store
from taskq.queues.rendering import render_bytes
from tests.console.console_support import logged_in, make_user, redis_snapshot

from . import go_asynq

BINARY = b"\xff\x00\xfe\x80raw"  # not UTF-8: shown as its bytes
DEADLINE = int(time.time()) + 86_400

#: What Go's client enqueues: every option, each task in a state of its own.
SPECS: dict[str, dict[str, Any]] = {
    "p1": {
        "type": "email:send",
        "payload": base64.b64encode(b'{"to": "ada@example.com"}').decode(),
        "queue": "mail",
        "max_retry": 3,
        "timeout_seconds": 90,
        "deadline_unix": DEADLINE,
        "retention_seconds": 7200,
        "headers": {"trace": "abc-123"},
        "task_id": "p1",
    },
    "b1": {"type": "blob:store", "payload": base64.b64encode(BINARY).decode(), "queue": "mail", "task_id": "b1"},
    "s1": {
        "type": "email:digest",
        "payload": base64.b64encode(b"digest").decode(),
        "queue": "mail",
        "process_in_seconds": 3600,
        "unique_seconds": 600,
        "task_id": "s1",
    },
    "g1": {
        "type": "email:line",
        "payload": base64.b64encode(b"line").decode(),
        "queue": "mail",
        "group": "user:42",
        "task_id": "g1",
    },  # fmt: skip
}


def seed_through_go(go: Any) -> None:
    """What Go's client writes for ``SPECS``, and a paused queue, ``low``."""
    for spec in SPECS.values():
        go.enqueue(spec)
    go.enqueue({"type": "idle", "queue": "low", "task_id": "l1"})
    go("act", "pause", "low")


@pytest.fixture
def asynq_console(settings_redis, r: redis.Redis, go, db):
    """``seed_through_go``, and the console's settings saying the keys are asynq's."""
    seed_through_go(go)
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    yield r
    handles.reset()


def _text(response: Any) -> str:
    return html.unescape(response.content.decode())


def _when(unix: int) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S")


def test_the_task_page_shows_every_field_as_go_reads_it(asynq_console: redis.Redis, go) -> None:
    viewer = logged_in(make_user("vera", "view_console"))
    for task_id in ("p1", "b1", "s1", "g1"):
        back = go("task", "mail", task_id)
        page = viewer.get(reverse("taskq:task", args=["mail", task_id]))
        assert page.status_code == 200, (task_id, page.status_code)
        text = _text(page)
        assert back["id"] in text and back["type"] in text and back["state"] in text
        assert duration(back["timeout_seconds"]) in text
        assert f"retried {back['retried']} of {back['max_retry']}" in text
        if back["deadline"]:
            assert _when(back["deadline"]) in text
        if back["retention_seconds"]:
            assert duration(back["retention_seconds"]) in text
        if back["next_process_at"] and back["state"] == "scheduled":
            assert _when(back["next_process_at"]) in text
        if back["group"]:
            assert back["group"] in text
        for name, value in (back["headers"] or {}).items():
            assert name in text and value in text
        payload = base64.b64decode(back["payload"])
        assert render_bytes(payload).text in text, task_id  # the bytes Go stored, rendered as any payload is


def test_a_non_utf8_payload_is_shown_byte_for_byte(asynq_console: redis.Redis, go) -> None:
    viewer = logged_in(make_user("vera", "view_console"))
    stored = asynq_console.hget(AsynqQueueKeys("mail").task("b1"), "msg")
    assert stored is not None and BINARY in stored  # what Go wrote holds the raw bytes
    shown = render_bytes(BINARY)
    assert shown.kind == "hex"
    page = _text(viewer.get(reverse("taskq:task", args=["mail", "b1"]) + "?full=payload"))
    assert shown.text in page and "binary (hex)" in page


def test_the_lists_show_each_task_in_its_state(asynq_console: redis.Redis, go) -> None:
    viewer = logged_in(make_user("vera", "view_console"))
    for state, ids in (("pending", {"p1", "b1"}), ("scheduled", {"s1"}), ("aggregating", {"g1"})):
        listed = {t["id"] for t in go("ls", "mail", state, "user:42") or []} if state == "aggregating" else None
        page = _text(viewer.get(reverse("taskq:queue", args=["mail"]) + f"?state={state}"))
        for task_id in ids:
            assert f"/queues/mail/tasks/{task_id}/" in page, (state, task_id)
        if listed is not None:
            assert listed == ids


#: Every page, and what it answers over asynq's keys: 200, or the explained refusal (404) of what asynq cannot hold.
PAGES: dict[str, tuple[str, int]] = {
    "dashboard": ("/", 200),
    **{
        f"queue-{s}": (f"/queues/mail/?state={s}", 200)
        for s in ("active", "pending", "aggregating", "scheduled", "retry", "archived", "completed")
    },  # fmt: skip
    "queue-filtered": ("/queues/mail/?state=pending&type=email:&text=ada", 200),
    "queue-paused": ("/queues/low/", 200),
    "task": ("/queues/mail/tasks/p1/", 200),
    "task-binary": ("/queues/mail/tasks/b1/", 200),
    "task-type": ("/queues/mail/types/email:send/", 200),
    "servers": ("/servers/", 200),
    "schedulers": ("/schedulers/", 200),
    "search": ("/search/?q=queue:mail", 200),
    "redis": ("/redis/", 200),
    "settings": ("/settings/", 200),
    "history": ("/history/", 404),
    "workflows": ("/workflows/", 404),
    "task-new": ("/tasks/new/", 404),
}


@pytest.mark.parametrize("role", ["viewer", "operator", "superuser"])
def test_every_page_answers_each_role(asynq_console: redis.Redis, role: str) -> None:
    user = {
        "viewer": lambda: make_user("vera", "view_console"),
        "operator": lambda: make_user("otto", "view_console", "operate_console", "create_task", "edit_task"),
        "superuser": lambda: make_user("ada", is_superuser=True, is_staff=True),
    }[role]()
    client = logged_in(user)
    wrong = {}
    for name, (path, status) in PAGES.items():
        if name == "task-new" and role == "viewer":
            status = 403  # not theirs to create, whatever the format
        response = client.get(path)
        if response.status_code != status:
            wrong[name] = response.status_code
        elif response.status_code == 404 and "Not in asynq's format" not in _text(response):
            wrong[name] = "a 404 that does not say why"
    assert not wrong, wrong


def test_pages_say_in_one_line_what_asynq_cannot_hold(asynq_console: redis.Redis) -> None:
    viewer = logged_in(make_user("vera", "view_console"))
    dashboard = _text(viewer.get("/"))
    assert ABSENT_ON_ASYNQ["series"] in dashboard
    assert 'href="/history/"' not in dashboard and 'href="/workflows/"' not in dashboard  # no link to what cannot be
    assert "New task" not in dashboard
    queue = _text(viewer.get("/queues/mail/"))
    assert ABSENT_ON_ASYNQ["waiting"] in queue and "?state=waiting" not in queue
    assert ABSENT_ON_ASYNQ["workflows"] in _text(viewer.get("/workflows/"))
    assert ABSENT_ON_ASYNQ["history"] in _text(viewer.get("/history/"))
    assert 'data-live-polling="polling every second' in dashboard


def test_someone_without_the_console_role_is_refused(asynq_console: redis.Redis) -> None:
    nobody = logged_in(make_user("nina"))
    assert nobody.get("/").status_code == 403
    assert DjangoClient().get("/").status_code == 302  # to the login page


def test_metrics_and_the_apis_reads_answer(asynq_console: redis.Redis) -> None:
    before = redis_snapshot(asynq_console)
    metrics = DjangoClient().get(reverse("taskq:metrics"))
    assert metrics.status_code == 200 and b'queue="mail"' in metrics.content
    secret = create_token("reader", ["*"])[1]
    api = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {secret}")
    size = api.get(reverse("taskq:api:size", args=["mail"]))
    assert size.status_code == 200 and size.json()["pending"] == 2
    task = api.get(reverse("taskq:api:task", args=["mail", "p1"]))
    assert task.status_code == 200 and task.json()["type"] == "email:send"
    assert redis_snapshot(asynq_console) == before  # reads wrote nothing


def test_a_go_servers_work_as_the_pages_show_it(settings_redis, r: redis.Redis, go, db) -> None:
    """A task a Go server failed shows its retries and last error as Go reads them, and no timeline beyond it (one
    line says why); the servers list and the server's page show the Go server, with no Quiet or Stop (one line)."""
    go.enqueue({"type": "fail", "queue": "q", "task_id": "f1", "max_retry": 2})
    go.enqueue({"type": "sleep", "queue": "q", "task_id": "s1", "payload": base64.b64encode(b"60000").decode()})
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    operator = logged_in(make_user("otto", "view_console", "operate_console"))
    with go.serving("-queues", "q=1", "-name", "g1", "-retry-delay", "3600"):
        go_asynq.wait_until(lambda: go("task", "q", "f1")["state"] == "retry", 60, 0.5)
        go_asynq.wait_until(lambda: go("task", "q", "s1")["state"] == "active", 60, 0.5)
        [server] = go_asynq.wait_until(lambda: go("servers"), 60, 0.5)
        failed = go("task", "q", "f1")
        page = _text(operator.get(reverse("taskq:task", args=["q", "f1"])))
        assert failed["last_err"] in page and _when(failed["last_failed_at"]) in page
        assert f"retry {failed['retried']} of {failed['max_retry']} due" in page
        assert ABSENT_ON_ASYNQ["timeline"] in page and ABSENT_ON_ASYNQ["attempts"] in page
        assert "From the queue's event stream" not in page and "No events for this task" not in page
        running = _text(operator.get(reverse("taskq:task", args=["q", "s1"])))
        assert "active" in running and "Lease expires" in running
        listed = operator.get(reverse("taskq:servers"))
        text = _text(listed)
        assert f"{server['host']}:{server['pid']}" in text and ABSENT_ON_ASYNQ["control"] in text
        assert "Quiet all" not in text and "Stop all" not in text
        [href] = set(re.findall(r'href="(/servers/[^"/]+/)"', listed.content.decode()))
        one = operator.get(href)
        assert one.status_code == 200 and ABSENT_ON_ASYNQ["control"] in _text(one)
        refused = operator.post(href + "stop/")
        assert refused.status_code == 409 and ABSENT_ON_ASYNQ["control"] in _text(refused)
    handles.reset()


def test_redaction_error_groups_search_and_the_fleet_bar(settings_redis, r: redis.Redis, go, db) -> None:
    """As on taskq's keys: TASKS_REDACT masks a Go task's payload on its page and in search, Go's failures form the
    queue's error groups, search finds Go's tasks, and the fleet bar adds up Go's queues."""
    secret = base64.b64encode(b'{"user": "ada", "password": "hunter2"}').decode()
    for n in range(2):
        go.enqueue({"type": "fail", "queue": "q", "task_id": f"f{n}", "max_retry": 0})
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    settings_redis.TASKS_REDACT = {"types": [], "keys": ["password"]}
    handles.reset()
    viewer = logged_in(make_user("vera", "view_console"))
    with go.serving("-queues", "q=1", "-name", "g1"):
        go_asynq.wait_until(lambda: {go("task", "q", f"f{n}")["state"] for n in range(2)} == {"archived"}, 60, 0.5)
    go.enqueue({"type": "login:check", "payload": secret, "queue": "q", "task_id": "pw2"})
    task = _text(viewer.get(reverse("taskq:task", args=["q", "pw2"])))
    assert "hunter2" not in task and "ada" in task
    found = _text(viewer.get("/search/?q=queue:q+type:login:*"))
    assert "pw2" in found and "hunter2" not in found
    archived = _text(viewer.get("/queues/q/?state=archived"))
    assert "go handler failed" in archived and 'id="error-groups"' in viewer.get("/queues/q/").content.decode()
    groups = _text(viewer.get("/queues/q/"))
    assert "go handler failed" in groups
    bar = viewer.get("/").content.decode()
    assert re.search(r'data-fleet-figure="archived"[^>]*>\s*2\s*<', bar), "the fleet bar counts Go's archived tasks"
    assert re.search(r'data-fleet-figure="pending"[^>]*>\s*1\s*<', bar)


def test_a_go_schedulers_entries_show_and_the_cron_actions_refuse(settings_redis, r: redis.Redis, go, db) -> None:
    """The Schedulers page lists a running Go scheduler's entry and its runs, offers no Run, Pause or Resume (one
    line says why), and refuses them if posted anyway, writing no taskq key."""
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    operator = logged_in(make_user("otto", "view_console", "operate_console"))
    with go.scheduling("-spec", "@every 1s", "-type", "tick"):
        [entry] = go_asynq.wait_until(lambda: go("schedulers"), 60, 0.5)
        go_asynq.wait_until(lambda: go("cron-history", entry["id"]), 60, 0.5)
        [ours] = scheduler_store().entries()
        page = operator.get(reverse("taskq:schedulers"))
        text = _text(page)
        assert page.status_code == 200 and "tick" in text and "@every 1s" in text
        assert ABSENT_ON_ASYNQ["cron"] in text and "/pause/" not in page.content.decode()
        for action in ("run", "pause", "resume"):
            refused = operator.post(reverse(f"taskq:cron-{action}", args=[ours.entry.id]))
            assert refused.status_code == 409, (action, refused.status_code)
            assert "Not in asynq's format" in _text(refused)
    assert not r.keys("tq:*")  # nothing of taskq's was written
    handles.reset()


def test_the_admins_task_browser_lists_go_tasks(asynq_console: redis.Redis) -> None:
    admin = logged_in(make_user("ada", is_superuser=True, is_staff=True))
    assert admin.get(reverse("admin:index")).status_code == 200
    changelist = reverse("admin:taskq_tasks_changelist")
    for state, ids in (("pending", ("p1", "b1")), ("scheduled", ("s1",)), ("aggregating", ("g1",))):
        page = admin.get(f"{changelist}?queue=mail&state={state}")
        assert page.status_code == 200, state
        assert all(task_id in _text(page) for task_id in ids), state
