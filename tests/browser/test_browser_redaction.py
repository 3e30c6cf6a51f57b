"""Redaction in a real headless Chromium: a task page shows masked values, and an operator holding
taskq.view_unredacted reveals them with the page's link, which the audit log records."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.browser

SECRET = "hunter2-s3cret"


def test_reveal_a_masked_payload_from_the_task_page(console, seed, operator, settings):
    from django.contrib.auth.models import Permission

    from taskq.queues.engine.redaction import MASK
    from taskq.queues.models import AuditLog
    from taskq.queues.redaction_access import VIEW_ACTION

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


def test_a_secret_in_free_text_is_masked_by_a_pattern_and_revealed_with_the_permission(
    console, seed, operator, settings
):
    """The issue's example (issue 35): no key names the secret; TASKS_REDACT_PATTERNS masks it on the page, in the
    headers and in the last error, and the permission's link reveals the payload and the headers."""
    from django.contrib.auth.models import Permission

    from taskq.queues.engine.redaction import MASK

    settings.TASKS_REDACT_PATTERNS = [r"(?i)password is \S+", r"sk_live_\w+"]
    operator.user_permissions.add(Permission.objects.get(codename="view_unredacted"))
    task_id = seed.retry(
        task_type="user:login", payload={"note": "my password is s3cret-pw"}, headers={"auth": "sk_live_HDR1"},
        error="login refused: password is s3cret-err",
    )  # fmt: skip

    console.login(f"/queues/default/tasks/{task_id}/")
    console.wait_text("Values are masked by TASKS_REDACT and TASKS_REDACT_PATTERNS")
    page = console.text()
    assert not any(secret in page for secret in ("s3cret-pw", "sk_live_HDR1", "s3cret-err"))
    assert f'"note": "my {MASK}"' in page and f"login refused: {MASK}" in page

    console.click("a[data-unredact]")
    console.wait_text("this look is in the audit log")
    page = console.text()
    assert "my password is s3cret-pw" in page and "sk_live_HDR1" in page
