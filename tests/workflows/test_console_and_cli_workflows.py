"""The console's workflow page and aggregating tab, and the CLI's ``group ls`` and ``workflow show``: access rules,
what they show, bad input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "console"))

from console_support import logged_in, make_user  # noqa: E402

from queues import handles  # noqa: E402
from queues.cli.main import main  # noqa: E402
from queues.engine import Client, chain, sig  # noqa: E402

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
    from queues.engine import Inspector

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
