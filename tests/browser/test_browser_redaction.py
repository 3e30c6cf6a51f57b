"""Redaction in a real headless Chromium: a task page shows masked values, and an operator holding
queues.view_unredacted reveals them with the page's link, which the audit log records."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.browser

SECRET = "hunter2-s3cret"


def test_reveal_a_masked_payload_from_the_task_page(console, seed, operator, settings):
    from django.contrib.auth.models import Permission

    from queues.engine.redaction import MASK
    from queues.models import AuditLog
    from queues.redaction_access import VIEW_ACTION

    settings.TASKS_REDACT = {"types": [], "keys": ["password"]}
    operator.user_permissions.add(Permission.objects.get(codename="view_unredacted"))
    task_id = seed.completed(
        task_type="user:signup", payload={"user": "ada", "password": SECRET}, result=json.dumps({"ok": True}).encode()
    )

    console.login(f"/queues/default/tasks/{task_id}/")
    console.wait_text("Values are masked by TASKS_REDACT")
    page = console.text()
    assert SECRET not in page and MASK in page and '"user": "ada"' in page
    assert not AuditLog.objects.filter(action=VIEW_ACTION).exists()

    console.click("a[data-unredact]")
    console.wait_text("this look is in the audit log")
    assert SECRET in console.text()
    [entry] = AuditLog.objects.filter(action=VIEW_ACTION)
    assert (entry.username, entry.queue, entry.task_ids) == (operator.get_username(), "default", [task_id])
