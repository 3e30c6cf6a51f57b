"""Redaction on every path (issue 22): with TASKS_REDACT keys password, card and token, no secret reaches a person
without ``queues.view_unredacted``, wherever a payload or result appears: the console's pages, the audit log (after
an edit, a bulk action and a look), the admin, the RQ bridge, the CLI and /metrics. The edit form is a look and
is audited; the audit log keeps an unredacted original only with TASKS_AUDIT_UNREDACTED, and reading it takes the
permission and is audited too."""

from __future__ import annotations

import json

import pytest
from console_support import logged_in, make_user
from django.urls import reverse

from queues.engine.redaction import MASK
from queues.models import AuditLog
from queues.redaction_access import VIEW_ACTION

pytestmark = pytest.mark.django_db

PASSWORD = "PENDING-SECRET-pw"
CARD = "4111-2222-3333-4444"
TOKEN = "NESTED-SECRET-token"
RESULT_TOKEN = "RESULT-SECRET-token"
ARCHIVED = "ARCHIVED-SECRET-pw"
FLOW = "WORKFLOW-SECRET-pw"
RQ_PASSWORD = "RQ-SECRET-pw"
SECRETS = (PASSWORD, CARD, TOKEN, RESULT_TOKEN, ARCHIVED, FLOW, RQ_PASSWORD)


@pytest.fixture
def redact(settings):
    settings.TASKS_REDACT = {"types": [], "keys": ["password", "card", "token"]}
    return settings


@pytest.fixture
def tasks(redact, seed):
    """Secrets in a pending task, deep in lists and dicts of a completed one (and its result), in an archived
    editable one and in a workflow's member."""
    from queues.engine import chain, sig

    nested = {"orders": [{"items": [{"sku": "a-1", "Card": CARD}]}, {"meta": {"TOKEN": TOKEN, "note": "kept"}}]}
    # Leased and finished first: the seeder leases the one pending task of the queue.
    done = seed.completed(
        task_type="shop:order", payload=nested, result=json.dumps({"session": [{"token": RESULT_TOKEN}]}).encode()
    )
    archived = seed.archived(task_type="user:reset", payload={"password": ARCHIVED, "to": "bob"})
    flow = seed.client.submit(
        chain(sig("user:signup", {"password": FLOW, "name": "flo"}), sig("user:welcome", {"name": "flo"})),
        workflow_id="wf-secret",
    )
    return {
        "pending": seed.pending(task_type="user:login", payload={"user": "ada", "password": PASSWORD}),
        "nested": done,
        "archived": archived,
        "workflow": flow.members[0].id,
    }


@pytest.fixture
def rq_job(settings_redis, redis_url):
    """A real RQ job, enqueued through django-rq in the tests' Redis database, whose kwargs hold a password."""
    import django_rq

    settings_redis.RQ_QUEUES = {"default": {"URL": redis_url}}
    settings_redis.RQ = {"COMMIT_MODE": "auto"}
    return django_rq.get_queue("default").enqueue("rq_jobs.login", "ada", password=RQ_PASSWORD)


@pytest.fixture
def editor(redact):
    """May edit and see unredacted values: the edits of the tests are made by this user."""
    return logged_in(make_user("edda", "view_console", "operate_console", "edit_task", "view_unredacted"))


@pytest.fixture
def staff(db):
    """Reads the console, the admin and the audit log, acts, but has no view_unredacted."""
    return logged_in(make_user("sam", "view_console", "operate_console", is_staff=True))


def assert_no_secret(body: str, where: str) -> None:
    leaked = [secret for secret in SECRETS if secret in body]
    assert not leaked, f"{where} shows {leaked}"


def get(client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def edit(editor, task_id: str) -> None:
    url = reverse("task-edit", args=["default", task_id])
    assert ARCHIVED in get(editor, url)  # the editor may look: the form shows it in full
    response = editor.post(url, {"payload": '{"password": "new-pw", "to": "bob"}', "encoding": "json"})
    assert response.status_code == 302


def test_no_console_page_shows_a_secret_to_a_user_without_the_permission(tasks, staff, rq_job):
    pages = [
        ("/", {}),
        *[("/queues/default/", {"state": state}) for state in ("pending", "waiting", "archived", "completed")],
        *[(f"/queues/default/tasks/{task_id}/", {}) for task_id in tasks.values()],
        *[(f"/queues/default/tasks/{task_id}/", {"full": "payload"}) for task_id in tasks.values()],
        (f"/queues/default/tasks/{tasks['nested']}/", {"full": "result"}),
        ("/search/", {"q": "ada"}),
        ("/search/", {"q": "type:shop:order"}),
        ("/queues/default/", {"state": "completed", "text": "kept"}),
        ("/workflows/", {}),
        ("/queues/default/workflows/wf-secret/", {}),
        ("/queues/default/types/shop:order/", {}),
        ("/schedulers/", {}),
        ("/rq/", {}),
        ("/rq/default/", {}),
        (f"/rq/default/jobs/{rq_job.id}/", {}),
        ("/metrics", {}),
    ]
    for url, params in pages:
        body = get(staff, url, **params)
        assert_no_secret(body, f"{url} {params}")
    shown = get(staff, f"/queues/default/tasks/{tasks['nested']}/", full="payload")
    assert MASK in shown and "a-1" in shown and "kept" in shown  # masked, the rest still there
    # Searching for a secret finds nothing (the page echoes the query itself, so it is checked apart).
    assert "No task matches" in get(staff, "/search/", q=PASSWORD)
    call = get(staff, f"/rq/default/jobs/{rq_job.id}/")
    assert f"rq_jobs.login(&#x27;ada&#x27;, password=&#x27;{MASK}&#x27;)" in call


def test_the_edit_form_is_a_look_audited_like_show_unredacted(tasks, editor, staff, seed):
    url = reverse("task-edit", args=["default", tasks["archived"]])
    assert staff.get(url).status_code == 403  # no edit_task, and no view_unredacted
    without = logged_in(make_user("eve", "view_console", "edit_task"))
    response = without.get(url)
    assert response.status_code == 403 and ARCHIVED not in response.content.decode()
    assert not AuditLog.objects.filter(action=VIEW_ACTION).exists()
    assert ARCHIVED in get(editor, url)
    look = AuditLog.objects.get(action=VIEW_ACTION)
    assert (look.username, look.queue, look.task_ids, look.detail) == (
        "edda",
        "default",
        [tasks["archived"]],
        "console edit form",
    )
    # A task with nothing masked: no view_unredacted needed, no look recorded.
    plain = seed.archived(queue="other", task_type="user:ping", payload={"note": "public"})
    assert "public" in get(without, reverse("task-edit", args=["other", plain]))
    assert AuditLog.objects.filter(action=VIEW_ACTION).count() == 1


def test_the_audit_log_and_the_admin_show_no_secret_after_an_edit_a_bulk_action_and_a_look(tasks, editor, staff):
    edit(editor, tasks["archived"])
    response = staff.post(
        reverse("task-batch", args=["default"]), {"action": "archive", "task_ids": [tasks["pending"]]}
    )
    assert response.status_code == 302
    una = logged_in(make_user("una", "view_console", "view_unredacted"))
    assert una.get(f"/queues/default/tasks/{tasks['nested']}/?unredacted=1").status_code == 200
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {"edit_task", VIEW_ACTION} <= actions and any("archive" in action for action in actions), actions
    for entry in AuditLog.objects.all():
        assert_no_secret(entry.detail, f"audit entry {entry.action}")
        assert entry.unredacted_detail == ""  # TASKS_AUDIT_UNREDACTED is off
    detail = json.loads(AuditLog.objects.get(action="edit_task").detail)
    assert json.loads(detail["original_payload"]) == {"password": MASK, "to": "bob"}
    pages = [
        ("/admin/queues/auditlog/", {}),
        ("/admin/queues/auditlog/", {"q": "password"}),
        *[(f"/admin/queues/auditlog/{entry.pk}/change/", {}) for entry in AuditLog.objects.all()],
        ("/admin/queues/tasks/", {"queue": "default", "state": "completed"}),
        ("/admin/queues/tasks/", {"queue": "default", "state": "pending"}),
        ("/admin/queues/tasks/", {"queue": "default", "state": "archived"}),
        *[(f"/queues/default/tasks/{task_id}/", {}) for task_id in tasks.values()],  # its operator actions
    ]
    for url, params in pages:
        assert_no_secret(get(staff, url, **params), f"{url} {params}")
    assert "Show unredacted original" not in get(staff, f"/admin/queues/auditlog/{entry.pk}/change/")


def test_the_unredacted_original_is_kept_only_with_the_setting_and_read_with_the_permission(tasks, editor, settings):
    settings.TASKS_AUDIT_UNREDACTED = True
    edit(editor, tasks["archived"])
    entry = AuditLog.objects.get(action="edit_task")
    assert ARCHIVED not in entry.detail and json.loads(json.loads(entry.unredacted_detail)["original_payload"]) == {
        "password": ARCHIVED,
        "to": "bob",
    }
    reveal = reverse("admin:queues_auditlog_unredacted", args=[entry.pk])
    change = f"/admin/queues/auditlog/{entry.pk}/change/"
    looks_before = AuditLog.objects.filter(action=VIEW_ACTION).count()

    staff = logged_in(make_user("sid", "view_console", is_staff=True))
    assert "Show unredacted original" not in get(staff, change) and ARCHIVED not in get(staff, change)
    response = staff.get(reveal)
    assert response.status_code == 403 and ARCHIVED not in response.content.decode()
    assert AuditLog.objects.filter(action=VIEW_ACTION).count() == looks_before

    allowed = logged_in(make_user("ulla", "view_console", "view_unredacted", is_staff=True))
    assert "Show unredacted original" in get(allowed, change)
    assert ARCHIVED in get(allowed, reveal)
    look = AuditLog.objects.filter(action=VIEW_ACTION).latest("id")
    assert (look.username, look.task_ids, look.detail) == (
        "ulla",
        [tasks["archived"]],
        f"admin audit log entry {entry.pk}",
    )
    assert allowed.post(reveal).status_code == 405


def test_an_edit_of_a_task_with_nothing_masked_keeps_no_unredacted_original(redact, seed, editor, settings):
    settings.TASKS_AUDIT_UNREDACTED = True
    task_id = seed.archived(task_type="user:ping", payload={"note": "public"})
    url = reverse("task-edit", args=["default", task_id])
    assert editor.post(url, {"payload": '{"note": "edited"}', "encoding": "json"}).status_code == 302
    entry = AuditLog.objects.get(action="edit_task")
    assert "public" in entry.detail and entry.unredacted_detail == ""
    assert not AuditLog.objects.filter(action=VIEW_ACTION).exists()
    allowed = logged_in(make_user("ulla", "view_console", "view_unredacted", is_staff=True))
    assert allowed.get(reverse("admin:queues_auditlog_unredacted", args=[entry.pk])).status_code == 404


def test_the_setting_is_declared_with_its_default():
    from queues.engine.settings import DEFAULTS

    assert DEFAULTS.as_settings()["TASKS_AUDIT_UNREDACTED"] is False and DEFAULTS.audit_unredacted is False


def test_the_cli_shows_no_secret(tasks):
    from tests.cli.helpers import invoke

    for argv in (
        ("task", "ls", "--queue", "default", "--state", "pending"),
        ("task", "ls", "--queue", "default", "--state", "completed", "--json"),
        ("task", "ls", "--queue", "default", "--state", "archived"),
        ("task", "inspect", tasks["nested"], "--queue", "default", "--json"),
        ("task", "inspect", tasks["archived"], "--queue", "default"),
        ("task", "inspect", tasks["pending"], "--queue", "default"),
    ):
        shown = invoke(*argv)
        assert shown.code == 0, shown.err
        assert_no_secret(shown.out + shown.err, " ".join(argv))


def test_a_periodic_task_payload_is_masked_and_read_only_in_the_admin_without_the_permission(redact, db):
    from django.contrib.auth.models import Permission

    from queues.models import PeriodicTask

    entry = PeriodicTask.objects.create(
        name="nightly-login", spec="@daily", task_type="user:login", queue="default",
        payload={"user": "ada", "password": PASSWORD},
    )  # fmt: skip
    url = f"/admin/queues/periodictask/{entry.pk}/change/"
    editor = make_user("pat", is_staff=True)
    editor.user_permissions.add(*Permission.objects.filter(codename__in=["view_periodictask", "change_periodictask"]))
    page = logged_in(editor).get(url).content.decode()
    assert PASSWORD not in page and MASK in page and 'name="payload"' not in page
    # Saving the form keeps the real payload: the masked text is shown, never written back.
    form = {"name": "nightly-login", "spec": "@hourly", "timezone": "UTC", "task_type": "user:login",
            "queue": "default", "options": "{}", "missed": "skip", "enabled": "on"}  # fmt: skip
    assert logged_in(editor).post(url, form).status_code == 302
    entry.refresh_from_db()
    assert (entry.spec, entry.payload["password"]) == ("@hourly", PASSWORD)
    revealer = logged_in(make_user("ursa", is_staff=True, is_superuser=True))  # a superuser holds every permission
    assert 'name="payload"' in revealer.get(url).content.decode()
