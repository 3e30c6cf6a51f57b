"""Creating a task from the console in a real headless Chromium (issue 27), the three ways in: from scratch (the
dashboard's "New task…"), from a queue page (the form opens on that queue and suggests its types) and from an
archived task ("Run again as a new task…", the form filled from it). Bad input is named on the form and writes
nothing; a good one lands on the new task's page.

No assertion is about time: the tests wait (generously) for a state, never for a duration.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from taskq.queues.models import AuditLog
from tests.console.console_support import redis_snapshot as snapshot

pytestmark = pytest.mark.browser


@pytest.fixture
def creator(operator):
    """The browser's operator, given ``taskq.create_task`` (no group holds it)."""
    from django.contrib.auth.models import Permission

    operator.user_permissions.add(Permission.objects.get(codename="create_task", content_type__app_label="taskq"))
    return operator


def fill(console, **fields: str) -> None:
    for name, text in fields.items():
        box = console.find(f"form[data-new-task] [name={name}]")
        box.clear()
        box.send_keys(text)


def refused(console, redis_client, says: str, **fields: str) -> None:
    """Submit the form with ``fields`` changed: it comes back naming ``says``, and Redis and the audit log are as
    they were."""
    fill(console, **fields)
    before = snapshot(redis_client)
    console.click("form[data-new-task] button[type=submit]")
    console.wait_text(says, "form[data-new-task] .errors")
    assert snapshot(redis_client) == before and not AuditLog.objects.exists()


def created(console, engine, lands_in: str, **fields: str):
    """Submit the form with ``fields`` changed and land on the page of the new task, in queue ``lands_in`` (its id
    the heading, the success message shown); returns the task, read from Redis."""
    fill(console, **fields)
    console.click("form[data-new-task] button[type=submit]")
    console.wait_for(lambda d: f"/queues/{lands_in}/tasks/" in urlparse(d.current_url).path, "the new task's page")
    console.wait_text("created in queue", ".messages")
    task_id = urlparse(console.driver.current_url).path.strip("/").split("/")[3]
    assert console.text("h1") == task_id
    return engine.get_task(lands_in, task_id)


def suggested_types(console) -> list[str]:
    return [option.get_attribute("value") for option in console.find_all("datalist#task-types option")]


def test_a_task_from_scratch_bad_input_first(console, creator, engine, redis_client):
    console.login("/")
    console.click("a[data-new-task-link]")
    console.wait_text("New task", "h1")
    assert console.find("[name=queue]").get_attribute("value") == "default"
    # A trailing comma (not JSON) and a header without its colon: both named, nothing written.
    refused(console, redis_client, "the payload is not valid JSON", type="report:build", payload='{"week": 47,}',
            headers="trace-id 4bf92f35")  # fmt: skip
    assert "line 1: write a header as name: value" in console.text("form[data-new-task]")
    assert console.find("[name=type]").get_attribute("value") == "report:build"  # what was typed is kept

    task = created(console, engine, "default", payload='{"week": 47}', headers="trace-id: 4bf92f35", max_retry="2")
    assert (task.type, task.state, task.json(), task.max_retry) == ("report:build", "pending", {"week": 47}, 2)
    assert task.headers == {"trace-id": "4bf92f35"}
    assert "create_task" in console.text("main")  # the task page lists the audit entries that name it


def test_a_task_from_a_queue_page_suggests_its_types(console, creator, engine, seed):
    seed.pending("email:deliver", queue="emails")
    seed.pending("sms:send", queue="emails")
    seed.pending("report:build", queue="reports")
    console.login("/queues/emails/")
    console.click("a[data-new-task-link]")
    console.wait_text("New task", "h1")
    assert console.find("[name=queue]").get_attribute("value") == "emails"
    assert suggested_types(console) == ["email:deliver", "sms:send"]
    fill(console, queue="reports")  # the suggestions follow the queue typed
    console.wait_for(lambda d: suggested_types(console) == ["report:build"], "the reports queue's types")
    fill(console, queue="emails")
    console.wait_for(lambda d: suggested_types(console) == ["email:deliver", "sms:send"], "the emails queue's types")
    task = created(console, engine, "emails", type="sms:send", payload='{"to": "+15550100"}', process_in="3600")
    assert (task.type, task.state, task.json()) == ("sms:send", "scheduled", {"to": "+15550100"})


def test_run_an_archived_task_again_as_a_new_task(console, creator, engine, seed, redis_client):
    archived = seed.archived(
        queue="emails", task_type="email:deliver", error="550 no such user", headers={"trace-id": "abc"}, max_retry=3
    )
    original = engine.get_task("emails", archived)
    console.login(f"/queues/emails/tasks/{archived}/")
    console.click(f"a[href='/queues/emails/tasks/{archived}/again/']")
    console.wait_text("Run again as a new task", "h1")
    assert '"to": "ada@example.com"' in console.find("[name=payload]").get_attribute("value")
    assert console.find("[name=type]").get_attribute("value") == "email:deliver"
    assert console.find("[name=headers]").get_attribute("value") == "trace-id: abc"
    # A glob character: taskworker --queues would read the name as a pattern.
    refused(console, redis_client, "may not contain '*', '?' or '['", queue="emails*")

    copy = created(console, engine, "emails", queue="emails", payload='{"to": "grace@example.com"}')
    assert copy.id != archived
    assert (copy.type, copy.state, copy.json(), copy.max_retry, copy.headers) == (
        "email:deliver",
        "pending",
        {"to": "grace@example.com"},
        3,
        {"trace-id": "abc"},
    )
    assert engine.get_task("emails", archived) == original  # the archived task is left as it was
    assert AuditLog.objects.get(action="create_task").task_ids == [copy.id]
