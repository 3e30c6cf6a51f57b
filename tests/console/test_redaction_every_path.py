"""Redaction on every path (issue 22): with TASKS_REDACT keys password, card and token, no secret reaches a person
without ``taskq.view_unredacted``, wherever a payload or result appears: the console's pages, the audit log (after
an edit, a bulk action and a look), the admin, the RQ bridge, the CLI and /metrics. The edit form is a look and
is audited; the audit log keeps an unredacted original only with TASKS_AUDIT_UNREDACTED, and reading it takes the
permission and is audited too.

Every path is walked twice: once masked by key rules, once by value patterns (``TASKS_REDACT_PATTERNS``) that
match the same secrets. The patterns also mask what no key names (issue 35): a secret in free text (the issue's
``{"note": "my password is s3cret-pw"}``), in headers, in error text an API consumer or an older worker wrote and
in a result that is plain text; ``test_free_text_*`` walks the same paths for those."""

from __future__ import annotations

import json

import pytest
from console_support import logged_in, make_user
from django.urls import reverse

from taskq.queues.engine.redaction import MASK
from taskq.queues.models import AuditLog
from taskq.queues.redaction_access import VIEW_ACTION

pytestmark = pytest.mark.django_db

PASSWORD = "PENDING-SECRET-pw"
CARD = "4111-2222-3333-4444"
TOKEN = "NESTED-SECRET-token"
RESULT_TOKEN = "RESULT-SECRET-token"
ARCHIVED = "ARCHIVED-SECRET-pw"
FLOW = "WORKFLOW-SECRET-pw"
RQ_PASSWORD = "RQ-SECRET-pw"
SECRETS = (PASSWORD, CARD, TOKEN, RESULT_TOKEN, ARCHIVED, FLOW, RQ_PASSWORD)


#: Two ways to mask the same secrets: by the keys that hold them, or by patterns that match their values.
RULES = {
    "keys": {"TASKS_REDACT": {"types": [], "keys": ["password", "card", "token"]}},
    "patterns": {"TASKS_REDACT_PATTERNS": [r"\b[A-Z]+-SECRET-[\w-]+", r"\b\d{4}-\d{4}-\d{4}-\d{4}\b"]},
}


@pytest.fixture(params=sorted(RULES))
def redact(request, settings):
    for name, value in RULES[request.param].items():
        setattr(settings, name, value)
    return settings


@pytest.fixture
def tasks(redact, seed):
    """Secrets in a pending task, deep in lists and dicts of a completed one (and its result), in an archived
    editable one and in a workflow's member."""
    from taskq.queues.engine import chain, sig

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
    url = reverse("taskq:task-edit", args=["default", task_id])
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
    url = reverse("taskq:task-edit", args=["default", tasks["archived"]])
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
    assert "public" in get(without, reverse("taskq:task-edit", args=["other", plain]))
    assert AuditLog.objects.filter(action=VIEW_ACTION).count() == 1


def test_the_audit_log_and_the_admin_show_no_secret_after_an_edit_a_bulk_action_and_a_look(tasks, editor, staff):
    edit(editor, tasks["archived"])
    response = staff.post(
        reverse("taskq:task-batch", args=["default"]), {"action": "archive", "task_ids": [tasks["pending"]]}
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
        ("/admin/taskq/auditlog/", {}),
        ("/admin/taskq/auditlog/", {"q": "password"}),
        *[(f"/admin/taskq/auditlog/{entry.pk}/change/", {}) for entry in AuditLog.objects.all()],
        ("/admin/taskq/tasks/", {"queue": "default", "state": "completed"}),
        ("/admin/taskq/tasks/", {"queue": "default", "state": "pending"}),
        ("/admin/taskq/tasks/", {"queue": "default", "state": "archived"}),
        *[(f"/queues/default/tasks/{task_id}/", {}) for task_id in tasks.values()],  # its operator actions
    ]
    for url, params in pages:
        assert_no_secret(get(staff, url, **params), f"{url} {params}")
    assert "Show unredacted original" not in get(staff, f"/admin/taskq/auditlog/{entry.pk}/change/")


def test_the_unredacted_original_is_kept_only_with_the_setting_and_read_with_the_permission(tasks, editor, settings):
    settings.TASKS_AUDIT_UNREDACTED = True
    edit(editor, tasks["archived"])
    entry = AuditLog.objects.get(action="edit_task")
    assert ARCHIVED not in entry.detail and json.loads(json.loads(entry.unredacted_detail)["original_payload"]) == {
        "password": ARCHIVED,
        "to": "bob",
    }
    reveal = reverse("admin:taskq_auditlog_unredacted", args=[entry.pk])
    change = f"/admin/taskq/auditlog/{entry.pk}/change/"
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
    url = reverse("taskq:task-edit", args=["default", task_id])
    assert editor.post(url, {"payload": '{"note": "edited"}', "encoding": "json"}).status_code == 302
    entry = AuditLog.objects.get(action="edit_task")
    assert "public" in entry.detail and entry.unredacted_detail == ""
    assert not AuditLog.objects.filter(action=VIEW_ACTION).exists()
    allowed = logged_in(make_user("ulla", "view_console", "view_unredacted", is_staff=True))
    assert allowed.get(reverse("admin:taskq_auditlog_unredacted", args=[entry.pk])).status_code == 404


def test_the_setting_is_declared_with_its_default():
    from taskq.queues.engine.settings import DEFAULTS

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

    from taskq.queues.models import PeriodicTask

    entry = PeriodicTask.objects.create(
        name="nightly-login", spec="@daily", task_type="user:login", queue="default",
        payload={"user": "ada", "password": PASSWORD},
    )  # fmt: skip
    url = f"/admin/taskq/periodictask/{entry.pk}/change/"
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


# -- what only value patterns mask: free text, headers, error text, text results (issue 35) ---------------------

NOTE_SECRET = "s3cret-pw"  # the example
HEADER_SECRET = "sk_live_HEADER42"
ERROR_SECRET = "hunter2-ERR"
TRACE_SECRET = "sk_live_TRACE9"
TEXT_SECRET = "sk_live_RESULT77"
CARD_NUMBER = 4111222233334444
EDITED_SECRET = "EDITED-pw-1"
CREATED_SECRET = "sk_live_CREATED5"
FLOW_ERROR_SECRET = "sk_live_FLOW3"
FREE_SECRETS = (
    NOTE_SECRET, HEADER_SECRET, ERROR_SECRET, TRACE_SECRET, TEXT_SECRET, str(CARD_NUMBER), EDITED_SECRET,
    CREATED_SECRET, FLOW_ERROR_SECRET,
)  # fmt: skip
FREE_PATTERNS = [r"(?i)password is \S+", r"sk_live_\w+", r"\b4111\d{12}\b"]


def assert_no_free_secret(body: str, where: str) -> None:
    leaked = [secret for secret in FREE_SECRETS if secret in body]
    assert not leaked, f"{where} shows {leaked}"


@pytest.fixture
def free_text(settings, seed):
    """No key rule names any of these: the secrets sit in free text, a header, error text an API consumer (or a
    worker from before the pattern) wrote, a traceback, a plain-text result and a number."""
    from taskq.queues.engine import chain, sig
    from taskq.queues.engine.failures import Failure

    settings.TASKS_REDACT_PATTERNS = FREE_PATTERNS
    trace = f"Traceback (most recent call last):\n  charge(card='{TRACE_SECRET}')\nValueError: declined"
    failed = seed.retry(
        task_type="shop:charge", payload={"amount": 5}, error=f"login refused: password is {ERROR_SECRET}",
        failure=Failure(kind="ValueError", message="declined", frame="shop:charge", traceback=trace),
    )  # fmt: skip
    done = seed.completed(
        task_type="shop:order", payload={"card": CARD_NUMBER, "sku": "a-1"}, result=f"token {TEXT_SECRET}".encode()
    )
    archived = seed.archived(task_type="user:reset", payload={"note": f"password is {EDITED_SECRET}", "to": "bob"})
    note = seed.pending(
        task_type="user:login", payload={"note": f"my password is {NOTE_SECRET}"},
        headers={"authorization": f"Bearer {HEADER_SECRET}"},
    )  # fmt: skip
    header_only = seed.pending(queue="hooks", task_type="hook:call", payload={"n": 1}, headers={"x-key": HEADER_SECRET})
    # A workflow whose first step failed with the secret in its error (a consumer's fail, say): the workflow and
    # its member carry that error text.
    flow = seed.client.submit(
        chain(sig("user:signup", {"n": 1}), sig("user:welcome", {"n": 2})), workflow_id="wf-free", queue="flows"
    )
    [lease] = seed.broker.run(seed.ops.dequeue("flows", 1, 60, "test-worker", "tok-"))
    error = f"signup refused: key {FLOW_ERROR_SECRET}"
    seed.broker.run(seed.ops.archive("flows", lease.id, lease.token, error, worker="test-worker"))
    return {
        "failed": failed, "done": done, "archived": archived, "note": note, "header_only": header_only,
        "flow_member": flow.members[0].id,
    }  # fmt: skip


def test_free_text_no_page_search_or_cli_output_shows_a_secret_matched_by_a_pattern(free_text, free_staff):
    from tests.cli.helpers import invoke

    staff = free_staff
    ids = free_text
    queue_tasks = [ids[name] for name in ("failed", "done", "archived", "note")]
    pages = [
        ("/", {}),
        *[("/queues/default/", {"state": state}) for state in ("pending", "retry", "archived", "completed")],
        ("/queues/hooks/", {"state": "pending"}),
        *[(f"/queues/default/tasks/{task_id}/", {}) for task_id in queue_tasks],
        *[(f"/queues/default/tasks/{task_id}/", {"full": "payload"}) for task_id in queue_tasks],
        (f"/queues/default/tasks/{ids['done']}/", {"full": "result"}),
        (f"/queues/hooks/tasks/{ids['header_only']}/", {}),
        ("/search/", {"q": "refused"}),
        ("/search/", {"q": "type:user:*"}),
        ("/queues/default/", {"state": "retry", "text": "refused"}),
        ("/queues/default/types/shop:charge/", {}),
        ("/admin/taskq/tasks/", {"queue": "default", "state": "retry"}),
        ("/admin/taskq/tasks/", {"queue": "default", "state": "pending"}),
        ("/admin/taskq/tasks/", {"queue": "default", "state": "completed"}),
        ("/workflows/", {}),
        ("/queues/flows/workflows/wf-free/", {}),
        (f"/queues/flows/tasks/{ids['flow_member']}/", {}),
        ("/queues/flows/", {"state": "archived"}),
    ]
    for url, params in pages:
        assert_no_free_secret(get(staff, url, **params), f"{url} {params}")
    assert f"signup refused: key {MASK}" in get(staff, "/queues/flows/workflows/wf-free/")
    shown = get(staff, f"/queues/default/tasks/{ids['note']}/", full="payload")
    assert f"my {MASK}" in shown and f"Bearer {MASK}" in shown  # masked, the rest still there
    failed = get(staff, f"/queues/default/tasks/{ids['failed']}/")
    assert f"login refused: {MASK}" in failed and "ValueError: declined" in failed
    # Free text finds nothing a pattern masks, in the payload or in the error (the page echoes the query itself).
    for secret in (NOTE_SECRET, ERROR_SECRET, str(CARD_NUMBER), "password"):
        assert "No task matches" in get(staff, "/search/", q=secret), secret
    assert "No task matches" not in get(staff, "/search/", q="refused")
    assert "0 matches" in get(staff, "/queues/default/", state="retry", text=ERROR_SECRET)
    assert "1 match:" in get(staff, "/queues/default/", state="retry", text="refused")
    for argv in (
        ("task", "ls", "--queue", "default", "--state", "pending", "--json"),
        ("task", "ls", "--queue", "default", "--state", "retry"),
        ("task", "inspect", ids["note"], "--queue", "default", "--json"),
        ("task", "inspect", ids["failed"], "--queue", "default"),
        ("task", "inspect", ids["done"], "--queue", "default", "--json"),
    ):
        result = invoke(*argv)
        assert result.code == 0, result.err
        assert_no_free_secret(result.out + result.err, " ".join(argv))


@pytest.fixture
def free_editor(free_text):
    """Edits and may see unredacted values, under the free-text patterns alone (``editor`` brings a rule set)."""
    return logged_in(make_user("edda", "view_console", "operate_console", "edit_task", "view_unredacted"))


@pytest.fixture
def free_staff(free_text):
    return logged_in(make_user("sam", "view_console", "operate_console", is_staff=True))


def test_free_text_forms_that_show_it_take_the_permission_and_the_reveal_is_audited(free_text, db):
    again = reverse("taskq:task-again", args=["hooks", free_text["header_only"]])
    without = logged_in(make_user("eve", "view_console", "edit_task", "create_task"))
    for url in (reverse("taskq:task-edit", args=["default", free_text["archived"]]), again):
        response = without.get(url)
        assert response.status_code == 403 and not any(s in response.content.decode() for s in FREE_SECRETS), url
    una = logged_in(make_user("una", "view_console", "view_unredacted"))
    page = get(una, f"/queues/default/tasks/{free_text['note']}/", unredacted="1")
    assert NOTE_SECRET in page and HEADER_SECRET in page
    look = AuditLog.objects.get(action=VIEW_ACTION)
    assert (look.username, look.task_ids) == ("una", [free_text["note"]])


def test_free_text_the_audit_log_and_the_admin_show_no_secret(free_text, free_editor, free_staff):
    editor, staff = free_editor, free_staff
    url = reverse("taskq:task-edit", args=["default", free_text["archived"]])
    assert EDITED_SECRET in get(editor, url)
    assert editor.post(url, {"payload": '{"to": "bob"}', "encoding": "json"}).status_code == 302
    creator = logged_in(make_user("cora", "view_console", "create_task"))
    created = creator.post(reverse("taskq:task-new"), {
        "type": "user:signup", "queue": "default", "encoding": "json",
        "payload": json.dumps({"note": f"api key {CREATED_SECRET}"}), "headers": f"authorization: {CREATED_SECRET}",
    })  # fmt: skip
    assert created.status_code == 302, created.content.decode()[:2000]
    batch = staff.post(
        reverse("taskq:task-batch", args=["default"]), {"action": "archive", "task_ids": [free_text["note"]]}
    )
    assert batch.status_code == 302
    act = staff.post(
        reverse("taskq:search-act"), {"q": f'"password is {ERROR_SECRET}"', "action": "delete", "expected": 0}
    )
    assert act.status_code == 302
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {"edit_task", "create_task", "search_delete"} <= actions, actions
    for entry in AuditLog.objects.all():
        assert_no_free_secret(entry.detail, f"audit entry {entry.action}")
    detail = json.loads(AuditLog.objects.get(action="edit_task").detail)
    assert json.loads(detail["original_payload"]) == {"note": MASK, "to": "bob"}
    creation = json.loads(AuditLog.objects.get(action="create_task").detail)
    assert json.loads(creation["payload"]) == {"note": f"api key {MASK}"}
    for url, params in [
        ("/admin/taskq/auditlog/", {}),
        ("/admin/taskq/auditlog/", {"q": "password"}),
        *[(f"/admin/taskq/auditlog/{entry.pk}/change/", {}) for entry in AuditLog.objects.all()],
    ]:
        assert_no_free_secret(get(staff, url, **params), f"{url} {params}")
