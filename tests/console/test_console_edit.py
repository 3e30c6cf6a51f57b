"""Edit and retry: who may (``taskq.edit_task``, held by no group), the form filled from the task, bad input
named and changing nothing, the edit done through the engine, and the original payload kept in the audit log."""

from __future__ import annotations

import json

import pytest
from console_support import logged_in, make_user
from django.contrib.auth.models import Group
from django.urls import reverse

from taskq.queues.models import AuditLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor(db):
    return logged_in(make_user("edda", "view_console", "edit_task"))


def edit_url(task_id: str, queue: str = "default") -> str:
    return reverse("taskq:task-edit", args=[queue, task_id])


def test_no_group_may_edit_by_default():
    for group in Group.objects.all():
        assert not group.permissions.filter(codename="edit_task").exists(), group.name


def test_the_access_matrix(client, viewer_client, operator_client, editor, seed, settings):
    task_id = seed.archived(error="SMTP 451")
    url = edit_url(task_id)
    assert client.get(url).status_code == 302  # to the login page
    for other in (viewer_client, operator_client):
        assert other.get(url).status_code == 403
        assert other.post(url, {"payload": "{}", "encoding": "json"}).status_code == 403
        assert "Edit and run" not in other.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert "Edit and run" in editor.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert editor.get(url).status_code == 200
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert editor.get(url).status_code == 403
    assert editor.put(url).status_code in (403, 405)


def test_the_form_is_filled_from_the_task_and_saving_edits_and_runs_it(editor, seed, engine):
    task_id = seed.retry(error="SMTP 451 greylisted", max_retry=4)
    page = editor.get(edit_url(task_id)).content.decode()
    assert "ada@example.com" in page and 'value="json" selected' in page.replace('" selected', '" selected')
    assert 'name="max_retry" value="4"' in page and "SMTP 451 greylisted" in page
    response = editor.post(
        edit_url(task_id),
        {"payload": '{"to": "bob@example.com"}', "encoding": "json", "queue": "", "max_retry": "2", "timeout": "30"},
    )
    assert response.status_code == 302 and response.url == reverse("taskq:task", args=["default", task_id])
    task = engine.get_task("default", task_id)
    assert (task.state, task.json(), task.max_retry, task.timeout, task.retried) == (
        "pending",
        {"to": "bob@example.com"},
        2,
        30.0,
        0,
    )
    entry = AuditLog.objects.get(action="edit_task")
    detail = json.loads(entry.detail)
    assert (entry.username, entry.queue, entry.task_ids) == ("edda", "default", [task_id])
    assert json.loads(detail["original_payload"]) == {"to": "ada@example.com"} and detail["original_encoding"] == "json"
    assert detail["original_options"]["max_retry"] == 4 and detail["new_options"]["max_retry"] == 2


def test_the_type_can_be_changed_and_the_change_is_audited(editor, seed, engine):
    task_id = seed.archived(task_type="emial:send", error="no handler for task type 'emial:send'")
    task_page = editor.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert f'href="{edit_url(task_id)}">correct its type</a>' in task_page  # the no-handler error's way out
    page = editor.get(edit_url(task_id)).content.decode()
    assert 'name="type" value="emial:send"' in page
    response = editor.post(edit_url(task_id), {"payload": "{}", "encoding": "json", "type": "email:send"})
    assert response.status_code == 302
    task = engine.get_task("default", task_id)
    assert (task.type, task.state) == ("email:send", "pending")
    assert engine.type_counts("default")["email:send"]["pending"] == 1  # the per-type counts followed it
    detail = json.loads(AuditLog.objects.get(action="edit_task").detail)
    assert (detail["original_options"]["type"], detail["new_options"]["type"]) == ("emial:send", "email:send")


def test_raw_bytes_and_another_queue(editor, seed, engine):
    task_id = seed.archived()
    response = editor.post(edit_url(task_id), {"payload": "AP8=", "encoding": "base64", "queue": "repair"})
    assert response.url == reverse("taskq:task", args=["repair", task_id])
    assert engine.get_task("repair", task_id).payload == b"\x00\xff"


@pytest.mark.parametrize(
    ("form", "says"),
    [
        ({"payload": "{not json", "encoding": "json"}, "not valid JSON"),
        ({"payload": "***", "encoding": "base64"}, "not valid base64"),
        ({"payload": "{}", "encoding": "yaml"}, "Select a valid choice"),
        ({"payload": "{}", "encoding": "json", "max_retry": "-1"}, "greater than or equal to 0"),
        ({"payload": "{}", "encoding": "json", "timeout": "0"}, "greater than or equal to 0.001"),
        ({"payload": "{}", "encoding": "json", "queue": "a{b"}, "may not contain"),
        ({"payload": "{}", "encoding": "json", "type": "mail\x07send"}, "contains control characters"),
    ],
)
def test_bad_input_is_named_and_changes_nothing(editor, seed, engine, redis_client, form, says):
    task_id = seed.archived()
    before = engine.get_task("default", task_id)
    response = editor.post(edit_url(task_id), form)
    assert response.status_code == 400 and says in response.content.decode()
    assert engine.get_task("default", task_id) == before and not AuditLog.objects.exists()


def test_a_task_that_is_not_retry_or_archived_cannot_be_edited(editor, seed):
    task_id = seed.pending()
    assert editor.get(edit_url(task_id)).status_code == 409
    assert editor.post(edit_url(task_id), {"payload": "{}", "encoding": "json"}).status_code == 409
    assert editor.get(edit_url("nope")).status_code == 404
