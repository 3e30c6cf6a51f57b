"""The console's workflow page and aggregating tab, and the CLI's ``group ls`` and ``workflow show``: access rules,
what they show, bad input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "console"))

from console_support import logged_in, make_user

from taskq.queues import handles
from taskq.queues.cli.main import main
from taskq.queues.engine import Client, chain, sig

Q = "wfq"


@pytest.fixture
def engine(settings_redis, redis_client, redis_url):
    handles.reset()
    client = Client(redis_url, policies=False)
    yield client
    client.close()
    handles.reset()


@pytest.fixture
def workflow(engine):
    engine.enqueue("email:line", {"line": 1}, group="user:42", queue=Q)
    engine.enqueue("email:line", {"line": 2}, group="user:42", queue=Q)
    return engine.submit(chain(sig("fetch", 1), sig("store", 2)), queue=Q, workflow_id="wf-1")


@pytest.mark.django_db
def test_workflow_page_shows_members_states_and_where_it_is(workflow):
    page = logged_in(make_user("vera", "view_console")).get(f"/queues/{Q}/workflows/wf-1/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "wf-1" in html and "fetch" in html and "store" in html and "waiting" in html and "running" in html
    assert f"/queues/{Q}/tasks/{workflow.members[0].id}/" in html  # where it is: the pending first step


@pytest.mark.django_db
def test_workflow_page_access_and_unknown_ids(workflow):
    from django.test import Client as Browser

    assert Browser().get(f"/queues/{Q}/workflows/wf-1/").status_code == 302  # login first
    assert logged_in(make_user("nina")).get(f"/queues/{Q}/workflows/wf-1/").status_code == 403
    viewer = logged_in(make_user("vera", "view_console"))
    assert viewer.get(f"/queues/{Q}/workflows/nope/").status_code == 404
    assert viewer.get("/queues/nope/workflows/wf-1/").status_code == 404
    assert viewer.post(f"/queues/{Q}/workflows/wf-1/").status_code == 405


@pytest.mark.django_db
def test_workflow_page_marks_a_member_that_is_gone_instead_of_linking_it(workflow, redis_url):
    from taskq.queues.engine import Inspector

    first, second = (m.id for m in workflow.members)
    inspector = Inspector(redis_url)
    inspector.delete_task(Q, first)  # deleted before it ran: the workflow fails, and the task is gone
    inspector.close()
    html = logged_in(make_user("vera", "view_console")).get(f"/queues/{Q}/workflows/wf-1/").content.decode()
    assert f"/queues/{Q}/tasks/{first}/" not in html and f'<span class="gone" title="{first} no longer exists' in html
    assert "badge state-failed" in html and 'class="data tasks"' in html  # styled like every other table


@pytest.mark.django_db
def test_workflows_list_links_each_workflow_and_is_in_the_nav(workflow, engine):
    engine.submit(chain(sig("fetch", 3), sig("store", 4)), queue="other", workflow_id="wf-2")
    viewer = logged_in(make_user("vera", "view_console"))
    html = viewer.get("/workflows/").content.decode()
    assert f'href="/queues/{Q}/workflows/wf-1/"' in html and 'href="/queues/other/workflows/wf-2/"' in html
    assert html.count('<span class="badge state-running">running</span>') == 2
    assert 'href="/workflows/"' in html  # the nav link
    one = viewer.get(f"/workflows/?queue={Q}").content.decode()
    assert "wf-1" in one and "wf-2" not in one
    task_page = viewer.get(f"/queues/{Q}/tasks/{workflow.members[0].id}/").content.decode()
    assert f'href="/queues/{Q}/workflows/wf-1/"' in task_page  # a member's page links its workflow


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "status"), [("?page=x", 400), ("?page=0", 400), ("?queue=nope", 404), ("?queue=a{b}", 400)]
)
def test_workflows_list_refuses_bad_input(workflow, query, status):
    assert logged_in(make_user("vera", "view_console")).get(f"/workflows/{query}").status_code == status


@pytest.mark.django_db
def test_aggregating_tab_lists_groups_and_tasks(workflow):
    page = logged_in(make_user("vera", "view_console")).get(f"/queues/{Q}/?state=aggregating")
    assert page.status_code == 200
    html = page.content.decode()
    assert "user:42 · 2" in html and "email:line" in html


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_cli_group_ls_and_workflow_show(workflow):
    code, out, _ = run_cli("--json", "group", "ls", "--queue", Q)
    assert code == 0 and [(g["name"], g["size"]) for g in json.loads(out)["groups"]] == [("user:42", 2)]
    code, out, _ = run_cli("workflow", "show", "wf-1", "--queue", Q)
    assert code == 0 and "running" in out and "fetch" in out and "waiting" in out
    code, out, err = run_cli("workflow", "show", "nope", "--queue", Q)
    assert code == 1 and out == "" and "no workflow" in err
    code, _, err = run_cli("group", "ls", "--queue", "nope")
    assert code == 1 and "nope" in err


# -- actions on a workflow (issue 23) ---------------------------------------------------------------------------


def workflow_state(redis_url: str, workflow_id: str = "wf-1") -> tuple[str, list[str]]:
    from taskq.queues.engine import Inspector

    with Inspector(redis_url) as inspector:
        info = inspector.workflow(Q, workflow_id)
    return info.state, [m.state for m in info.members]


@pytest.fixture
def failed(workflow, redis_url):
    """wf-1 failed: its first step was archived by an operator, so the second one was cancelled."""
    from taskq.queues.engine import Inspector

    with Inspector(redis_url, actor="op") as inspector:
        inspector.archive_task(Q, workflow.members[0].id)
    return workflow


@pytest.mark.django_db
def test_a_failed_workflow_page_says_what_happened_and_offers_its_actions(failed):
    html = logged_in(make_user("otto", "operate_console")).get(f"/queues/{Q}/workflows/wf-1/").content.decode()
    assert "0 of 2 done" in html and "Members left" not in html
    assert "Left to run</dt><dd data-workflow-left>none" in html  # it ended: nothing is left to run
    assert f'action="/queues/{Q}/workflows/wf-1/retry/"' in html and "Retry the failed step" in html
    assert '<dt data-workflow-action="archive" hidden>' in html  # archive takes a running workflow only
    viewer = logged_in(make_user("vera", "view_console")).get(f"/queues/{Q}/workflows/wf-1/").content.decode()
    assert "Retry the failed step" in viewer and "/retry/" not in viewer  # the guidance, not the button


@pytest.mark.django_db
def test_a_member_that_never_ran_reads_so_and_the_retry_counts_its_steps_in_words(failed):
    operator = logged_in(make_user("otto", "operate_console"))
    cancelled = operator.get(f"/queues/{Q}/tasks/{failed.members[1].id}/").content.decode()
    assert '<dt>Retries</dt><dd data-live-field="retried">archived before it ran</dd>' in cancelled
    assert "SkipRetry" not in operator.get(f"/queues/{Q}/?state=archived").content.decode()  # the tab's column
    response = operator.post(f"/queues/{Q}/workflows/wf-1/retry/", follow=True)
    assert "Workflow wf-1: 2 steps run again." in response.content.decode()  # read "2 steps runs again."


@pytest.mark.django_db
def test_the_list_shows_progress_and_the_failing_step(failed, engine):
    engine.submit(chain(sig("fetch", 3)), queue=Q, workflow_id="wf-2")
    html = logged_in(make_user("vera", "view_console")).get(f"/workflows/?queue={Q}").content.decode()
    assert html.count("0 of 2 done") == 1 and html.count("0 of 1 done") == 1
    assert f'<a href="/queues/{Q}/tasks/{failed.members[0].id}/">fetch</a>' in html and "archived by op" in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("action", "before", "after"),
    [
        ("retry", "failed", ("running", ["pending", "waiting"])),
        ("cancel", "running", ("cancelled", ["cancelled", "cancelled"])),
        ("archive", "running", ("failed", ["failed", "cancelled"])),
    ],
)
def test_an_operators_action_is_done_and_audited(workflow, redis_url, action, before, after):
    from taskq.queues.audit import AuditLog
    from taskq.queues.engine import Inspector

    if before == "failed":
        with Inspector(redis_url, actor="op") as inspector:
            inspector.archive_task(Q, workflow.members[0].id)
    response = logged_in(make_user("otto", "operate_console")).post(f"/queues/{Q}/workflows/wf-1/{action}/")
    assert response.status_code == 302 and response["Location"] == f"/queues/{Q}/workflows/wf-1/"
    assert workflow_state(redis_url) == after
    entry = AuditLog.objects.get()
    assert (entry.username, entry.action, entry.queue) == ("otto", f"{action}_workflow", Q)
    assert entry.detail.startswith("workflow wf-1: ")


@pytest.mark.django_db
def test_workflow_actions_refuse_bad_input_and_change_nothing(workflow, redis_url, settings):
    from taskq.queues.audit import AuditLog

    operator = logged_in(make_user("otto", "operate_console"))
    before = workflow_state(redis_url)
    refused = operator.post(f"/queues/{Q}/workflows/wf-1/retry/")  # it is running: nothing failed to retry
    assert refused.status_code == 409 and "only a failed workflow can be retried" in refused.content.decode()
    assert operator.post(f"/queues/{Q}/workflows/nope/cancel/").status_code == 404
    assert operator.post("/queues/nope/workflows/wf-1/cancel/").status_code == 404
    assert operator.post(f"/queues/{Q}/workflows/a{{b}}/cancel/").status_code == 404  # not an id: no such URL
    assert operator.get(f"/queues/{Q}/workflows/wf-1/cancel/").status_code == 405
    assert logged_in(make_user("vera", "view_console")).post(f"/queues/{Q}/workflows/wf-1/cancel/").status_code == 403
    csrf = logged_in(make_user("olga", "operate_console"), enforce_csrf_checks=True)
    assert csrf.post(f"/queues/{Q}/workflows/wf-1/cancel/").status_code == 403
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert operator.post(f"/queues/{Q}/workflows/wf-1/cancel/").status_code == 403
    assert workflow_state(redis_url) == before and not AuditLog.objects.exists()
