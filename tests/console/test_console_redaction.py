"""TASKS_REDACT everywhere a person sees a payload or result: console pages, search, the admin's task view, the
live feed and the CLI; the audited reveal for taskq.view_unredacted; and a bad setting stopping start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from console_support import logged_in, make_user
from django.core.exceptions import ImproperlyConfigured

from taskq.queues.engine.redaction import MASK
from taskq.queues.models import AuditLog
from taskq.queues.redaction_access import VIEW_ACTION, rules

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-s3cret"
CARD = "4111-1111-1111-1111"


@pytest.fixture
def redact(settings):
    settings.TASKS_REDACT = {"types": ["billing:"], "keys": ["password", "card"]}
    return settings


@pytest.fixture
def tasks(redact, seed):
    """A task masked by its type, one masked by a key deep in its payload and result, and a plain one."""
    return {
        "type": seed.completed(task_type="billing:charge", result=json.dumps({"charged": CARD}).encode()),
        "key": seed.completed(
            task_type="user:signup",
            payload={"user": {"name": "ada", "login": [{"password": SECRET}]}},
            result=json.dumps({"session": {"Card": CARD}, "ok": True}).encode(),
        ),
        "plain": seed.completed(task_type="user:ping", payload={"note": "nothing to hide"}),
    }


@pytest.fixture
def unredacted(db):
    return make_user("ursula", "view_console", "view_unredacted")


def page(client, task_id, query=""):
    response = client.get(f"/queues/default/tasks/{task_id}/{query}")
    return response.status_code, response.content.decode()


def looks():
    return list(AuditLog.objects.filter(action=VIEW_ACTION).order_by("id"))


def test_viewer_sees_type_rules_whole_and_key_rules_at_depth_masked(viewer_client, tasks):
    _, body = page(viewer_client, tasks["type"])
    assert CARD not in body and "billing:charge" in body
    assert body.count(MASK) == 2  # payload and result
    assert "this task type: the whole payload and result" in body
    assert "Show unredacted" not in body  # a viewer is not offered the reveal
    _, body = page(viewer_client, tasks["key"])
    assert SECRET not in body and CARD not in body
    assert "ada" in body and "&quot;password&quot;" in body and "&quot;Card&quot;" in body  # the rest stays
    _, body = page(viewer_client, tasks["plain"])
    assert "nothing to hide" in body and "data-redaction" not in body
    assert looks() == []


def test_operator_without_the_permission_sees_masks_and_may_not_reveal(operator_client, tasks):
    _, body = page(operator_client, tasks["key"])
    assert SECRET not in body and "Show unredacted" not in body
    status, body = page(operator_client, tasks["key"], "?unredacted=1")
    assert status == 403 and SECRET not in body
    assert looks() == []


def test_the_permission_reveals_in_full_and_each_look_is_audited(unredacted, tasks):
    client = logged_in(unredacted)
    _, body = page(client, tasks["key"])
    assert SECRET not in body and 'href="?unredacted=1"' in body  # masked until asked, and offered
    assert looks() == []
    _, body = page(client, tasks["key"], "?unredacted=1")
    assert SECRET in body and CARD in body and "this look is in the audit log" in body
    assert "data-live-revealed" in body  # the live feed (masked) will not overwrite what the page shows
    _, body = page(client, tasks["type"], "?unredacted=1&full=payload")
    assert CARD in body
    entries = looks()
    assert [(e.username, e.user_id, e.queue, e.task_ids) for e in entries] == [
        ("ursula", unredacted.id, "default", [tasks["key"]]),
        ("ursula", unredacted.id, "default", [tasks["type"]]),
    ]
    # Nothing masked on the task: nothing to reveal, nothing logged.
    _, body = page(client, tasks["plain"], "?unredacted=1")
    assert "nothing to hide" in body and len(looks()) == 2


def test_bad_reveal_parameter_is_a_400(unredacted, tasks):
    status, _ = page(logged_in(unredacted), tasks["key"], "?unredacted=maybe-not&full=nope")
    assert status == 400


def test_lists_show_masked_previews_to_everyone(unredacted, viewer_client, tasks):
    for client in (viewer_client, logged_in(unredacted)):
        body = client.get("/queues/default/?state=completed").content.decode()
        assert SECRET not in body and CARD not in body and "nothing to hide" in body
        assert f"&quot;password&quot;:&quot;{MASK}&quot;" in body
    assert looks() == []


def test_search_does_not_match_inside_masked_values(unredacted, viewer_client, tasks, seed):
    seed.pending(task_type="user:signup", payload={"note": SECRET})  # the same text, but visible
    for client in (viewer_client, logged_in(unredacted)):
        body = client.get("/queues/default/", {"state": "completed", "text": SECRET}).content.decode()
        assert "No completed tasks match" in body
        body = client.get("/queues/default/", {"state": "pending", "text": SECRET}).content.decode()
        assert SECRET in body  # not masked: found and shown
        body = client.get("/queues/default/", {"state": "completed", "text": "ada"}).content.decode()
        assert tasks["key"] in body and SECRET not in body  # found through what is visible, shown masked


def test_workflow_page_masks_member_results(viewer_client, redact, seed):
    from taskq.queues.engine import chain, sig

    flow = seed.client.submit(
        chain(sig("user:signup", {"name": "ada"}), sig("billing:charge", {"amount": 1})), workflow_id="wf-r"
    )
    first = flow.members[0].id
    leased = seed.broker.run(seed.ops.dequeue("default", 1, 60, "test-worker", "tok-"))
    assert [t.id for t in leased] == [first]
    seed.broker.run(
        seed.ops.write_result(
            "default", first, leased[0].token, "result", json.dumps({"password": SECRET, "user_id": 7}).encode()
        )
    )
    seed.broker.run(seed.ops.complete("default", [(first, leased[0].token, 600.0)], "test-worker"))
    body = viewer_client.get("/queues/default/workflows/wf-r/").content.decode()
    assert "user_id" in body and SECRET not in body and MASK in body


def test_schedulers_page_masks_entry_payloads(viewer_client, redact, engine, redis_url):
    from taskq.queues.engine import FakeClock, ScheduleRegistry, schedule
    from taskq.worker.scheduler import build

    registry = ScheduleRegistry()
    schedule("@every 10s", "user:renew", {"card": CARD, "plan": "gold"}, registry=registry)
    scheduler = build(redis_url, "tq", registry=registry, clock=FakeClock(time.time()), heartbeat_interval=3600)
    scheduler.run_once()
    scheduler.store.broker.close()
    body = viewer_client.get("/schedulers/").content.decode()
    assert "user:renew" in body and "gold" in body and CARD not in body and MASK in body


def test_admin_task_view_is_masked(tasks, client):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    body = client.get("/admin/taskq/tasks/", {"queue": "default", "state": "completed"}).content.decode()
    assert "billing:charge" in body and "nothing to hide" in body
    assert SECRET not in body and CARD not in body and MASK in body


def test_live_task_detail_carries_the_masked_result(tasks, engine):
    from taskq.console.live.hub import task_detail

    masked = task_detail(engine, "default", tasks["key"], "completed")["result"]
    assert CARD not in masked["text"] and MASK in masked["text"] and masked["redacted"] is True
    plain = task_detail(engine, "default", tasks["plain"], "completed")["result"]
    assert plain["redacted"] is False


def test_cli_masks_by_default_and_unredacted_is_audited(tasks, redis_url):
    from taskq.queues.cli.context import actor
    from tests.cli.helpers import invoke

    shown = invoke("task", "inspect", tasks["key"], "--queue", "default", "--json")
    assert shown.code == 0 and SECRET not in shown.out and CARD not in shown.out and MASK in shown.out
    listed = invoke("task", "ls", "--queue", "default", "--state", "completed")
    assert listed.code == 0 and CARD not in listed.out and "nothing to hide" in listed.out
    assert looks() == []
    full = invoke("task", "inspect", tasks["key"], "--queue", "default", "--unredacted", "--json")
    assert json.loads(full.out)["payload"] == json.dumps(
        {"user": {"name": "ada", "login": [{"password": SECRET}]}}, separators=(",", ":")
    )
    full = invoke("task", "ls", "--queue", "default", "--state", "completed", "--unredacted", "--json")
    assert CARD in full.out
    entries = looks()
    assert [(e.username, e.user_id, e.detail) for e in entries] == [
        (actor(), None, "cli task inspect"),
        (actor(), None, "cli task ls"),
    ]
    assert entries[0].task_ids == [tasks["key"]] and sorted(entries[1].task_ids) == sorted(
        [tasks["key"], tasks["type"]]
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"types": ["billing:"], "kyes": ["password"]}, 'a dict with "types" and "keys"'),
        (["billing:"], 'a dict with "types" and "keys"'),
        ({"types": "billing:"}, 'TASKS_REDACT\\["types"\\] must be a list of strings'),
        ({"keys": ["password", 3]}, 'TASKS_REDACT\\["keys"\\] must be a list of strings'),
        ({"types": ["x" * 300]}, "task type"),
        ({"keys": ["pass\tword"]}, "printable"),
    ],
)
def test_bad_setting_values_are_named(settings, value, message):
    settings.TASKS_REDACT = value
    with pytest.raises(ImproperlyConfigured, match=message):
        rules()


def test_a_bad_setting_stops_start_up_with_a_clear_error():
    env = {**os.environ, "TASKS_REDACT_KEYS": "password, pass\x01word", "DJANGO_SETTINGS_MODULE": "taskq.console.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "(taskq.E110) TASKS_REDACT (TASKS_REDACT_TYPES / TASKS_REDACT_KEYS)" in done.stderr
    ok = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        timeout=120,
        capture_output=True,
        env={**env, "TASKS_REDACT_KEYS": "password,card", "TASKS_REDACT_TYPES": "billing:"},
    )
    assert ok.returncode == 0, ok.stderr
