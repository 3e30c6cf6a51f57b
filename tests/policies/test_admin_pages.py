"""The admin of definitions, policies, the audit log and the task view: an access matrix (anonymous, staff
without permission, viewer, operator, superuser), CSRF, bad input, Redis down, and the audit entries."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client as WebClient

from taskq.queues.models import AuditLog, QueueDefinition

pytestmark = pytest.mark.django_db
TASKS = "/admin/taskq/tasks/"


def staff(username: str, group: str | None = None, superuser: bool = False) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True, is_superuser=superuser)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


def web(user: User | None = None, csrf: bool = False) -> WebClient:
    browser = WebClient(enforce_csrf_checks=csrf)
    if user is not None:
        browser.force_login(user)
    return browser


@pytest.fixture
def archived(r, client, inspector):
    """Two archived tasks and one pending in queue "mail"."""
    ids = [client.enqueue("email", {"n": n}, queue="mail").id for n in range(3)]
    inspector.archive_task("mail", ids[0])
    inspector.archive_task("mail", ids[1])
    return ids


def test_access_matrix_of_the_task_view(archived):
    assert web().get(TASKS).status_code == 302  # anonymous: to the login page
    assert web(staff("nobody")).get(TASKS + "?queue=mail").status_code == 403
    for user in (
        staff("viewer", "Console viewers"),
        staff("operator", "Console operators"),
        staff("root", superuser=True),
    ):
        page = web(user).get(TASKS + "?queue=mail&state=archived")
        assert page.status_code == 200
        assert archived[0] in page.content.decode() and archived[2] not in page.content.decode()
        assert ('name="task_ids"' in page.content.decode()) == (user.username != "viewer")


def test_the_admin_index_links_to_the_task_view(r):
    page = web(staff("viewer", "Console viewers")).get("/admin/")
    assert page.status_code == 200 and TASKS in page.content.decode()


def test_operator_runs_archives_deletes_and_each_is_audited(archived, inspector):
    operator = staff("operator", "Console operators")
    browser = web(operator)
    reply = browser.post(
        TASKS, {"queue": "mail", "state": "archived", "page": "1", "action": "run", "task_ids": [archived[0]]}
    )
    assert reply.status_code == 302 and "queue=mail" in reply["Location"]
    assert inspector.get_task("mail", archived[0]).state == "pending"
    browser.post(TASKS, {"queue": "mail", "state": "pending", "action": "archive", "task_ids": [archived[2]]})
    assert inspector.get_task("mail", archived[2]).state == "archived"
    browser.post(
        TASKS, {"queue": "mail", "state": "archived", "action": "delete", "task_ids": [archived[1], "no-such-task"]}
    )
    assert inspector.queue_info("mail").archived == 1
    entries = list(AuditLog.objects.order_by("id").values_list("username", "action", "queue", "task_ids"))
    assert entries == [
        ("operator", "run_task", "mail", [archived[0]]),
        ("operator", "archive_task", "mail", [archived[2]]),
        ("operator", "delete_task", "mail", [archived[1]]),
    ]
    assert "refused" in AuditLog.objects.get(action="delete_task").detail
    page = browser.get(TASKS + "?queue=mail&state=archived")
    assert "no-such-task" in page.content.decode()  # the refusal was reported


def test_cancel_of_a_task_that_is_not_active_is_refused_with_a_message(archived, inspector):
    browser = web(staff("root", superuser=True))
    browser.post(
        TASKS, {"queue": "mail", "state": "pending", "action": "cancel", "task_ids": [archived[2]]}, follow=True
    )
    assert inspector.get_task("mail", archived[2]).state == "pending"
    assert AuditLog.objects.get(action="cancel_task").task_ids == []


def test_viewers_and_staff_without_permission_cannot_act(archived, inspector):
    for user in (staff("viewer", "Console viewers"), staff("nobody")):
        reply = web(user).post(
            TASKS, {"queue": "mail", "state": "archived", "action": "delete", "task_ids": archived[:2]}
        )
        assert reply.status_code == 403
    assert web().post(TASKS, {"queue": "mail", "action": "delete", "task_ids": archived[:2]}).status_code == 302
    assert inspector.queue_info("mail").archived == 2 and not AuditLog.objects.exists()


def test_csrf_is_enforced(archived, inspector):
    browser = web(staff("operator", "Console operators"), csrf=True)
    data = {"queue": "mail", "state": "archived", "action": "delete", "task_ids": [archived[0]]}
    assert browser.post(TASKS, data).status_code == 403
    assert inspector.queue_info("mail").archived == 2
    browser.get(TASKS + "?queue=mail&state=archived")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    assert browser.post(TASKS, data, HTTP_X_CSRFTOKEN=token).status_code == 302
    assert inspector.queue_info("mail").archived == 1


@pytest.mark.parametrize(
    "query",
    [
        "?queue=nope",
        "?queue=mail&state=bogus",
        "?queue=mail&page=x",
        "?queue=mail&page=0",
        "?queue=mail&page=99999",
        "?queue=%7Bbad%7D",
        "?queue=" + "q" * 10_000,
        "?queue=mail&state=archived&page=-1",
        "?state=retry",
    ],
)
def test_bad_queries_give_a_message_not_a_500(archived, query):
    page = web(staff("root", superuser=True)).get(TASKS + query)
    assert page.status_code == 200
    assert page.context["messages"] or "Pick a queue" in page.content.decode() or "No " in page.content.decode()


@pytest.mark.parametrize(
    "data",
    [
        {"queue": "mail", "action": "explode", "task_ids": ["x"]},
        {"queue": "mail", "action": "run"},
        {"queue": "", "action": "run", "task_ids": ["x"]},
        {"queue": "nope", "action": "run", "task_ids": ["x"]},
        {"queue": "mail", "action": "run", "task_ids": ["x" * 10_000]},
        {"queue": "{bad}", "action": "delete", "task_ids": ["x"]},
    ],
)
def test_bad_actions_change_nothing_and_never_500(archived, inspector, data):
    reply = web(staff("root", superuser=True)).post(TASKS, data, follow=True)
    assert reply.status_code == 200 and list(reply.context["messages"])
    assert inspector.queue_info("mail").archived == 2


def test_redis_down_is_a_clear_page(archived, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/2"
    page = web(staff("root", superuser=True)).get(TASKS + "?queue=mail")
    assert page.status_code == 503 and "unreachable" in page.content.decode()
    changelist = web(staff("root2", superuser=True)).get("/admin/taskq/queuedefinition/")
    assert changelist.status_code == 200


def test_queue_definition_admin_shows_live_state_and_pauses(archived, inspector, mirror):
    QueueDefinition.objects.create(name="mail", weight=2)
    QueueDefinition.objects.create(name="unborn")
    root = staff("root", superuser=True)
    browser = web(root)
    page = browser.get("/admin/taskq/queuedefinition/").content.decode()
    assert "running" in page and "no tasks yet" in page and "tasks/?queue=mail" in page
    ids = [str(d.pk) for d in QueueDefinition.objects.all()]
    browser.post("/admin/taskq/queuedefinition/", {"action": "pause", "_selected_action": ids})
    assert inspector.queue_info("mail").paused
    assert "paused" in browser.get("/admin/taskq/queuedefinition/").content.decode()
    browser.post("/admin/taskq/queuedefinition/", {"action": "resume", "_selected_action": ids})
    assert not inspector.queue_info("mail").paused
    assert list(AuditLog.objects.order_by("id").values_list("action", "queue")) == [
        ("pause_queue", "mail"),
        ("resume_queue", "mail"),
    ]


def test_viewers_cannot_pause(archived, inspector):
    QueueDefinition.objects.create(name="mail")
    viewer = staff("viewer", "Console viewers")
    viewer.user_permissions.add(*Permission.objects.filter(codename="view_queuedefinition"))
    browser = web(viewer)
    assert browser.get("/admin/taskq/queuedefinition/").status_code == 200
    browser.post(
        "/admin/taskq/queuedefinition/",
        {"action": "pause", "_selected_action": [str(QueueDefinition.objects.get().pk)]},
    )
    assert not inspector.queue_info("mail").paused and not AuditLog.objects.exists()


def test_saving_a_definition_in_the_admin_mirrors_and_audits(r, django_capture_on_commit_callbacks):
    browser = web(staff("root", superuser=True))
    with django_capture_on_commit_callbacks(execute=True):
        reply = browser.post(
            "/admin/taskq/queuedefinition/add/",
            {
                "name": "reports",
                "weight": "4",
                "rank": "0",
                "description": "",
                "concurrency_cap": "0",
                "rate_limit": "0",
                "rate_period": "1",
            },
        )
    assert reply.status_code == 302
    assert r.hexists("tq:config:queues", "reports")
    assert AuditLog.objects.get().action == "add_queuedefinition"
    refused = browser.post(
        "/admin/taskq/queuedefinition/add/",
        {
            "name": "bad{name}",
            "weight": "4",
            "rank": "0",
            "concurrency_cap": "0",
            "rate_limit": "0",
            "rate_period": "1",
        },
    )
    assert refused.status_code == 200 and "may not contain" in refused.content.decode()


def test_audit_log_admin_is_read_only_and_filterable(r):
    from taskq.queues.audit import record_action

    root = staff("root", superuser=True)
    entry = record_action(root, "run_task", queue="mail", task_ids=["a"])
    browser = web(root)
    assert browser.get("/admin/taskq/auditlog/?action=run_task&queue=mail").status_code == 200
    assert browser.get(f"/admin/taskq/auditlog/?user__id__exact={root.pk}").status_code == 200
    assert browser.get("/admin/taskq/auditlog/add/").status_code == 403
    assert browser.post(f"/admin/taskq/auditlog/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditLog.objects.filter(pk=entry.pk).exists()
    assert web(staff("viewer", "Console viewers")).get("/admin/taskq/auditlog/").status_code == 200


def test_read_only_mode_binds_the_admin_task_view_and_queue_actions(archived, inspector, settings):
    settings.TASKS_CONSOLE_READ_ONLY = True
    operator = web(staff("operator", "Console operators"))
    page = operator.get(TASKS + "?queue=mail&state=archived")
    assert page.status_code == 200 and 'name="task_ids"' not in page.content.decode()
    reply = operator.post(TASKS, {"queue": "mail", "state": "archived", "action": "run", "task_ids": [archived[0]]})
    assert reply.status_code == 403
    assert inspector.get_task("mail", archived[0]).state == "archived"
    assert not AuditLog.objects.exists()


def test_a_keyspace_at_another_key_layout_gives_one_message_and_changes_nothing(archived, r):
    QueueDefinition.objects.create(name="mail")
    r.set("tq:layout", "2")  # a newer release migrated the keyspace; this admin is the old one
    before = {key: r.dump(key) for key in r.keys("*")}
    refusal = (
        "the Redis keyspace has key layout 2, but this taskq reads and writes layout 1: upgrade this process "
        "(nothing was written)"
    )
    browser = web(staff("root", superuser=True))
    reply = browser.post(
        TASKS, {"queue": "mail", "state": "archived", "action": "run", "task_ids": archived[:2]}, follow=True
    )
    assert reply.status_code == 200
    assert [str(m) for m in reply.context["messages"]] == [f"Nothing was done: {refusal}"]
    reply = browser.post(
        "/admin/taskq/queuedefinition/",
        {"action": "pause", "_selected_action": [str(QueueDefinition.objects.get().pk)]},
        follow=True,
    )
    assert reply.status_code == 200
    assert [str(m) for m in reply.context["messages"]] == [f"Nothing was paused: {refusal}"]
    assert {key: r.dump(key) for key in r.keys("*")} == before
    assert not AuditLog.objects.filter(action="pause_queue").exists()


def test_admin_pause_says_the_queue_name_as_written(r, inspector):
    from taskq.queues import conf

    QueueDefinition.objects.create(name="low")
    conf.get_client().enqueue("t", b"", queue="low")  # Redis knows the queue
    browser = web(staff("root", superuser=True))
    ids = [str(d.pk) for d in QueueDefinition.objects.all()]
    page = browser.post("/admin/taskq/queuedefinition/", {"action": "pause", "_selected_action": ids}, follow=True)
    assert "Queue “low” paused." in page.content.decode() and "Low paused" not in page.content.decode()
    assert list(AuditLog.objects.values_list("action", flat=True)) == ["pause_queue"]  # the console's name


def test_old_admin_action_names_are_renamed_and_an_edit_entry_reads_as_text(r):
    import json
    from importlib import import_module

    from django.apps import apps

    from taskq.queues.audit import record_action

    migration = import_module("taskq.queues.migrations.0006_audit_action_names")
    for old in ("queue.pause", "task.run", "queuedefinition.add", "apitoken.revoke", "task.view_unredacted"):
        record_action(None, old, username="before")
    migration.rename(apps, None)
    assert sorted(AuditLog.objects.values_list("action", flat=True)) == [
        "add_queuedefinition", "pause_queue", "revoke_apitoken", "run_task", "task.view_unredacted"
    ]  # fmt: skip
    migration.rename_back(apps, None)
    assert "queue.pause" in set(AuditLog.objects.values_list("action", flat=True))

    root = staff("root", superuser=True)
    detail = {"original_payload": '{\n  "to": "ada@example.com"\n}', "new_options": {"queue": "low", "max_retry": 3}}
    entry = record_action(root, "edit_task", queue="mail", task_ids=["a"], detail=json.dumps(detail))
    page = web(root).get(f"/admin/taskq/auditlog/{entry.pk}/change/").content.decode()
    assert "{\n  &quot;to&quot;: &quot;ada@example.com&quot;\n}" in page  # its own line breaks, not \\n
    assert "\\n" not in page.split("original_payload", 1)[1].split("</dd>", 1)[0]
    assert "&quot;max_retry&quot;: 3" in page
