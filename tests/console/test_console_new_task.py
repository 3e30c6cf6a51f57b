"""Creating a task from the console (issue 27): who may (``taskq.create_task``, held by no group), the form
prefilled from the page it is opened from or from the task it runs again, the task enqueued as a producer would
and its page the landing place, every refusal named on the form with Redis left as it was, and each creation in
the audit log with its payload masked as everywhere else."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from console_support import logged_in, make_user
from console_support import redis_snapshot as snapshot
from django.contrib.auth.models import Group
from django.urls import reverse

from taskq.queues.engine.redaction import MASK
from taskq.queues.models import AuditLog
from taskq.queues.redaction_access import VIEW_ACTION

pytestmark = pytest.mark.django_db

NEW = reverse("taskq:task-new")


@pytest.fixture
def creator(db):
    return logged_in(make_user("cora", "view_console", "create_task"))


def again_url(task_id: str, queue: str = "default") -> str:
    return reverse("taskq:task-again", args=[queue, task_id])


def created(response) -> tuple[str, str]:
    """The queue and id of the task a successful POST landed on (the new task's page)."""
    assert response.status_code == 302, response.content.decode()[:2000]
    parts = response.url.strip("/").split("/")
    assert parts[0] == "queues" and parts[2] == "tasks", response.url
    return parts[1], parts[3]


def test_no_group_may_create_by_default():
    assert Group.objects.filter(name__in=["Console viewers", "Console operators"]).count() == 2
    for group in Group.objects.all():
        assert not group.permissions.filter(codename="create_task").exists(), group.name


def test_the_access_matrix(client, viewer_client, operator_client, creator, seed, engine, redis_client, settings):
    task_id = seed.archived(queue="emails")
    pages = ["/", "/queues/emails/", "/queues/emails/types/email:deliver/", f"/queues/emails/tasks/{task_id}/"]
    form = {"type": "email:deliver", "queue": "emails", "payload": "{}", "encoding": "json"}
    before = snapshot(redis_client)
    for url in (NEW, again_url(task_id, "emails")):
        assert client.get(url).status_code == 302  # to the login page
        assert client.post(url, form).status_code == 302
        for other in (
            viewer_client,
            operator_client,
            logged_in(make_user(f"e{len(url)}", "view_console", "edit_task")),
        ):
            assert other.get(url).status_code == 403
            assert other.post(url, form).status_code == 403
    for page in pages:
        assert "New task…" not in operator_client.get(page).content.decode()
        assert "Run again as a new task" not in operator_client.get(page).content.decode()
    assert snapshot(redis_client) == before and not AuditLog.objects.exists()
    assert creator.get(NEW).status_code == 200 and creator.get(again_url(task_id, "emails")).status_code == 200
    shown = [creator.get(page).content.decode() for page in pages]
    assert f'href="{NEW}"' in shown[0]
    assert f'href="{NEW}?queue=emails"' in shown[1]
    assert f'href="{NEW}?queue=emails&amp;type=email%3Adeliver"' in shown[2]
    assert f'href="{again_url(task_id, "emails")}">Run again as a new task' in shown[3]


def test_read_only_mode_hides_and_refuses_it(creator, seed, engine, redis_client, settings):
    settings.TASKS_CONSOLE_READ_ONLY = True
    task_id = seed.retry()
    before = snapshot(redis_client)
    for url in (NEW, again_url(task_id)):
        assert creator.get(url).status_code == 403
        response = creator.post(url, {"type": "a", "queue": "default", "payload": "{}", "encoding": "json"})
        assert response.status_code == 403 and b"read-only mode" in response.content
    for page in ("/", "/queues/default/", f"/queues/default/tasks/{task_id}/"):
        text = creator.get(page).content.decode()
        assert "New task…" not in text and "Run again as a new task" not in text
    assert snapshot(redis_client) == before and not AuditLog.objects.exists()


def test_the_form_is_prefilled_from_the_page_it_was_opened_from(creator, seed, engine):
    seed.pending("email:deliver", queue="emails")
    seed.pending("sms:send", queue="emails")
    seed.pending("report:build", queue="reports")
    page = creator.get(f"{NEW}?queue=emails&type=email:deliver").content.decode()
    assert 'name="queue" value="emails"' in page and 'name="type" value="email:deliver"' in page
    types = page[page.index('<datalist id="task-types">') :].split("</datalist>")[0]
    assert '<option value="email:deliver">' in types and '<option value="sms:send">' in types
    assert "report:build" not in types  # another queue's: swapped in by the page when the queue field changes
    by_queue = page.split('id="types-by-queue" type="application/json">')[1].split("</script>")[0]
    assert json.loads(by_queue) == {"emails": ["email:deliver", "sms:send"], "reports": ["report:build"]}
    assert '<option value="reports">' in page  # the queues, suggested too
    plain = creator.get(NEW).content.decode()  # from the dashboard: the default queue, no type
    assert 'name="queue" value="default"' in plain and '<input type="text" name="type" list="task-types"' in plain
    assert 'name="type" value=' not in plain
    assert creator.get(f"{NEW}?type={'x' * 300}").status_code == 400


def test_creating_a_task_with_every_option_lands_on_its_page_and_is_audited(creator, engine, seed):
    deadline = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    response = creator.post(NEW, {
        "type": "email:deliver", "queue": "emails", "payload": '{"to": "ada@example.com"}', "encoding": "json",
        "process_in": "600", "max_retry": "3", "timeout": "30", "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%S"),
        "unique": "120", "retention": "3600", "headers": "trace-id: 4bf92f35\n\nx-origin: console ",
    })  # fmt: skip
    queue, task_id = created(response)
    task = engine.get_task(queue, task_id)
    assert (queue, task.type, task.state, task.json()) == (
        "emails",
        "email:deliver",
        "scheduled",
        {"to": "ada@example.com"},
    )
    assert (task.max_retry, task.timeout, task.retention, task.deadline) == (3, 30.0, 3600.0, deadline)
    assert task.headers == {"trace-id": "4bf92f35", "x-origin": "console"} and task.unique_key
    assert 590 < (task.next_process_at - datetime.now(UTC)).total_seconds() <= 600
    page = creator.get(response.url).content.decode()
    assert f"Task {task_id} created in queue emails: scheduled." in page
    entry = AuditLog.objects.get(action="create_task")
    assert (entry.username, entry.queue, entry.task_ids, entry.task_count) == ("cora", "emails", [task_id], 1)
    detail = json.loads(entry.detail)
    assert json.loads(detail["payload"]) == {"to": "ada@example.com"} and detail["encoding"] == "json"
    assert detail["options"] == {
        "queue": "emails", "headers": {"trace-id": "4bf92f35", "x-origin": "console"}, "process_in": 600.0,
        "max_retry": 3, "timeout": 30.0, "deadline": deadline.isoformat(), "unique": 120.0, "retention": 3600.0,
    }  # fmt: skip
    assert detail["type"] == "email:deliver" and detail["run_again_from"] is None
    assert entry.unredacted_detail == ""  # nothing masked: nothing kept beside


def test_a_process_time_text_and_raw_bytes(creator, engine):
    at = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    queue, task_id = created(creator.post(NEW, {"type": "t", "queue": "default", "payload": "plain words",
                                                "encoding": "text", "process_at": at.isoformat()}))  # fmt: skip
    task = engine.get_task(queue, task_id)
    assert (task.payload, task.state, task.next_process_at) == (b"plain words", "scheduled", at)
    queue, task_id = created(
        creator.post(NEW, {"type": "t", "queue": "bytes", "payload": "AP8=", "encoding": "base64"})
    )
    task = engine.get_task("bytes", task_id)
    assert (task.payload, task.state, task.max_retry) == (b"\x00\xff", "pending", 25)  # the engine's defaults
    assert json.loads(AuditLog.objects.get(task_ids=[task_id]).detail)["encoding"] == "base64"


@pytest.mark.parametrize("state", ["archived", "retry", "completed", "pending"])
def test_run_again_as_a_new_task_copies_the_task_and_leaves_it_alone(creator, seed, engine, state):
    made = {"archived": seed.archived, "retry": seed.retry, "completed": seed.completed, "pending": seed.pending}
    options = {"task_type": "report:build"} if state != "pending" else {}
    task_id = made[state](queue="reports", payload={"report": "weekly"}, headers={"trace-id": "abc"}, max_retry=4,
                          timeout=90, **options)  # fmt: skip
    original = engine.get_task("reports", task_id)
    response = creator.get(again_url(task_id, "reports"))
    page = response.content.decode()
    assert "Run again as a new task" in page and "&quot;report&quot;: &quot;weekly&quot;" in page
    assert json.loads(response.context["form"]["payload"].value()) == {"report": "weekly"}
    assert 'name="max_retry" value="4"' in page and 'name="timeout" value="90.0"' in page
    assert "trace-id: abc</textarea>" in page and 'name="queue" value="reports"' in page
    queue, new_id = created(creator.post(again_url(task_id, "reports"), {
        "type": original.type, "queue": "reports", "payload": '{"report": "monthly"}', "encoding": "json",
        "max_retry": "4", "timeout": "90", "headers": "trace-id: abc",
    }))  # fmt: skip
    assert new_id != task_id and queue == "reports"
    copy = engine.get_task("reports", new_id)
    assert (copy.state, copy.json(), copy.max_retry, copy.timeout, copy.headers, copy.retried) == (
        "pending", {"report": "monthly"}, 4, 90.0, {"trace-id": "abc"}, 0
    )  # fmt: skip
    assert engine.get_task("reports", task_id) == original
    detail = json.loads(AuditLog.objects.get(action="create_task").detail)
    assert detail["run_again_from"] == {"queue": "reports", "id": task_id}


def test_run_again_keeps_a_future_deadline_and_the_retention_but_not_a_past_deadline(creator, seed, engine):
    later = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    task_id = seed.completed(deadline=later)  # retention 600
    page = creator.get(again_url(task_id)).content.decode()
    assert f'value="{later.strftime("%Y-%m-%dT%H:%M:%S")}"' in page and 'name="retention" value="600.0"' in page
    past = seed.archived(deadline=datetime.now(UTC) - timedelta(hours=1))
    assert engine.get_task("default", past).deadline  # kept by the task, but a copy would never run
    form = creator.get(again_url(past)).context["form"]
    assert form["deadline"].value() is None and form["retention"].value() is None


def test_a_task_gone_with_its_payload_cannot_be_run_again(creator, seed, engine):
    task_id = seed.pending()
    engine.delete_task("default", task_id)
    assert creator.get(again_url(task_id)).status_code == 404
    assert "Run again as a new task" not in creator.get(f"/queues/default/tasks/{task_id}/").content.decode()
    assert creator.get(again_url("x", "no-such-queue")).status_code == 404


@pytest.fixture
def redact(settings):
    settings.TASKS_REDACT = {"types": ["vault:"], "keys": ["password"]}
    return settings


def test_the_audit_entry_holds_the_payload_masked(redact, creator, engine, settings):
    queue, task_id = created(creator.post(NEW, {"type": "vault:store", "queue": "default",
                                                "payload": '{"secret": "S3CRET-1"}', "encoding": "json"}))  # fmt: skip
    assert engine.get_task(queue, task_id).json() == {"secret": "S3CRET-1"}  # the task holds it in full
    entry = AuditLog.objects.get(action="create_task")
    assert "S3CRET-1" not in entry.detail and json.loads(json.loads(entry.detail)["payload"]) == MASK
    assert entry.unredacted_detail == ""
    settings.TASKS_AUDIT_UNREDACTED = True
    created(creator.post(NEW, {"type": "user:reset", "queue": "default",
                               "payload": '{"password": "PW-2", "to": "bob"}', "encoding": "json"}))  # fmt: skip
    entry = AuditLog.objects.filter(action="create_task").first()
    assert json.loads(json.loads(entry.detail)["payload"]) == {"password": MASK, "to": "bob"}
    assert "PW-2" in entry.unredacted_detail  # kept beside it, only with the setting


def test_running_a_masked_task_again_takes_the_unredacted_permission_and_is_a_look(redact, creator, seed, engine):
    task_id = seed.archived(task_type="vault:store", payload={"secret": "S3CRET-3"})
    assert creator.get(again_url(task_id)).status_code == 403
    assert "Run again as a new task" not in creator.get(f"/queues/default/tasks/{task_id}/").content.decode()
    seer = logged_in(make_user("sid", "view_console", "create_task", "view_unredacted"))
    assert "Run again as a new task" in seer.get(f"/queues/default/tasks/{task_id}/").content.decode()
    assert "S3CRET-3" in seer.get(again_url(task_id)).content.decode()
    look = AuditLog.objects.get(action=VIEW_ACTION)
    assert (look.username, look.task_ids, look.detail) == ("sid", [task_id], "console run-again form")


DEEP = "[" * 65 + "]" * 65  # one level past TASKS_MAX_PAYLOAD_DEPTH's default, 64


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"payload": "{not json"}, "payload", "the payload is not valid JSON"),
        ({"payload": "***", "encoding": "base64"}, "payload", "the payload is not valid base64"),
        ({"encoding": "yaml"}, "encoding", "Select a valid choice. yaml is not one of the available choices."),
        ({"max_retry": "many"}, "max_retry", "Enter a whole number."),
        ({"max_retry": "1001"}, "max_retry", "less than or equal to 1000"),
        ({"timeout": "-1"}, "timeout", "greater than or equal to 0.001"),
        ({"retention": "nan"}, "retention", "Enter a number."),
        ({"process_at": "next tuesday"}, "process_at", "Enter a valid date/time."),
        ({"process_at": "2030-01-01T00:00:00", "process_in": "5"}, "process_in", "give process at or process in"),
        ({"queue": "a{b"}, "queue", "may not contain '{' or '}'"),
        ({"queue": "mail*"}, "queue", "may not contain '*', '?' or '['"),
        ({"queue": ".."}, "queue", "'.' and '..' are steps of a URL path"),
        ({"queue": ""}, "queue", "This field is required."),
        ({"type": ""}, "type", "This field is required."),
        ({"type": "mail\x07send"}, "type", 'task type "mail\\u0007send" contains control characters'),
        ({"headers": "no colon here"}, "headers", "line 1: write a header as name: value"),
        ({"headers": "a: 1\na: 2"}, "headers", 'line 2: header "a" is given twice'),
        ({"headers": "\n".join(f"h{n}: v" for n in range(65))}, "headers", "not created: headers must be a dict of"),
        ({"process_in": str(400 * 86400)}, "process_in", "not created: process_in must be from 0 to 31622400 seconds"),
        ({"payload": "x" * (1024 * 1024 + 1), "encoding": "text"}, "payload", "not created: payload is 1048577 bytes"),
        ({"payload": DEEP}, "payload", "the payload is nested deeper than 64 levels"),
        ({"payload": base64.b64encode(DEEP.encode()).decode(), "encoding": "base64"}, "payload",
         "not created: payload is nested deeper than 64 levels"),
    ],
)  # fmt: skip
def test_each_refusal_is_named_on_the_form_and_writes_nothing(creator, seed, redis_client, change, field, says):
    seed.pending(queue="emails")  # so the database holds something to compare
    before = snapshot(redis_client)
    form = {"type": "email:deliver", "queue": "emails", "payload": "{}", "encoding": "json", **change}
    response = creator.post(NEW, form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert any(says in message for message in errors.get(field, [])), errors
    assert "New task" in response.content.decode()  # the form again, with what was typed
    assert snapshot(redis_client) == before and not AuditLog.objects.exists()


@pytest.mark.parametrize("payload", ["{not json", DEEP])
def test_a_refused_payload_is_shown_on_the_payload_field_beside_the_other_fields_refusals(creator, payload):
    form = {"type": "email:deliver", "queue": "emails", "payload": payload, "encoding": "json",
            "process_at": "2030-01-01T00:00:00", "process_in": "5"}  # fmt: skip
    page = creator.post(NEW, form).content.decode()
    fields = {part.split('"', 1)[0]: part for part in page.split('<label for="id_')[1:]}
    assert 'class="errors"' not in page.split('<label for="id_')[0]  # nothing above the fields
    assert "the payload is" in fields["payload"] and 'class="errors"' in fields["payload"]
    assert "give process at or process in" in fields["process_in"]  # checked too, not hidden behind the payload's


def test_a_duplicate_unique_task_is_refused_and_writes_nothing(creator, engine, redis_client):
    form = {"type": "report:build", "queue": "reports", "payload": '{"week": 47}', "encoding": "json", "unique": "600"}
    queue, task_id = created(creator.post(NEW, form))
    before = snapshot(redis_client)
    response = creator.post(NEW, form)
    assert response.status_code == 409
    assert "already holds its lock in queue &quot;reports&quot;" in response.content.decode()
    assert snapshot(redis_client) == before and AuditLog.objects.count() == 1
    assert engine.queue_info("reports").pending == 1


def test_a_workflow_members_copy_is_a_plain_task(creator, seed, engine):
    from taskq.queues.engine import chain, sig

    flow = seed.client.submit(chain(sig("fetch", {"n": 1}), sig("store", {"n": 2})), workflow_id="wf-1")
    member = engine.get_task("default", flow.members[1].id)
    assert member.workflow == "wf-1" and member.state == "waiting"
    form = creator.get(again_url(member.id)).context["form"]
    response = creator.post(
        again_url(member.id), {name: value for name, value in form.initial.items() if value is not None}
    )
    queue, task_id = created(response)
    copy = engine.get_task(queue, task_id)
    assert (copy.type, copy.json(), copy.state, copy.workflow, copy.after) == ("store", {"n": 2}, "pending", None, [])
