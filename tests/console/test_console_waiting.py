"""The console on tasks waiting for their dependencies (issue 16): before, such a task was in no tab and no figure,
and neither delete nor run took it. Now the queue page has a ``waiting`` tab with its count, the size counts
them, each row links the tasks it waits on, and operators delete or run one now (audited); bad input gets a
named error, never a 5xx."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(seed) -> dict[str, str]:
    """A is pending; B waits for A; C waits for B; E is the on_error callback of workflow wf."""
    from taskq.queues.engine import chain as chained
    from taskq.queues.engine import sig

    a = seed.pending(task_id="A")
    seed.client.enqueue("report:build", {"n": 1}, task_id="B", after=[a])
    seed.client.enqueue("report:mail", {"n": 2}, task_id="C", after=["B"])
    seed.client.submit(chained(sig("x")), on_error=sig("alert", task_id="E"), workflow_id="wf")
    return {"A": a}


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def count_of(body: str, name: str) -> str:
    found = re.search(rf'data-live-count="{name}">([^<]*)<', body)
    assert found, name
    return found.group(1)


def test_the_waiting_tab_has_its_count_and_the_size_counts_them(viewer_client, chain):
    body = viewer_client.get("/queues/default/").content.decode()
    assert "?state=waiting" in body
    assert count_of(body, "waiting") == "3"  # B, C and the on_error callback E
    assert count_of(body, "size") == "5"  # A and x pending, 3 waiting


def test_each_waiting_row_links_the_tasks_it_waits_on(viewer_client, chain):
    response = viewer_client.get("/queues/default/?state=waiting")
    assert response.status_code == 200
    body = response.content.decode()
    assert f'href="{reverse("taskq:task", args=["default", "A"])}" data-waits-on="A"' in body
    assert f'href="{reverse("taskq:task", args=["default", "B"])}" data-waits-on="B"' in body
    assert f'href="{reverse("taskq:workflow", args=["default", "wf"])}"' in body  # E waits for its workflow to fail
    assert "Waiting on" in body


def test_the_task_page_of_a_waiting_task_names_what_it_waits_on_and_offers_run_and_delete(operator_client, chain):
    body = operator_client.get(reverse("taskq:task", args=["default", "B"])).content.decode()
    assert "data-waiting-on" in body and 'data-waits-on="A"' in body
    assert 'name="action" value="run"' in body and 'name="action" value="delete"' in body


def test_an_operator_runs_a_waiting_task_now(operator_client, engine, chain, audit):
    here = "/queues/default/?state=waiting"
    response = operator_client.post("/queues/default/batch/", {"action": "run", "task_ids": ["B"], "next": here})
    assert response.status_code == 302 and response["Location"] == here
    assert "1 task moved to pending." in texts(response)
    assert engine.get_task("default", "B").state == "pending"
    assert engine.get_task("default", "C").state == "waiting"
    assert (audit[-1]["action"], audit[-1]["task_ids"]) == ("run_task", ["B"])


def test_an_operator_deletes_a_waiting_task_and_its_dependents_are_archived(operator_client, engine, chain, audit):
    from taskq.queues.engine import TaskNotFoundError

    response = operator_client.post("/queues/default/batch/", {"action": "delete", "task_ids": ["B"]})
    assert "1 task deleted." in texts(response)
    with pytest.raises(TaskNotFoundError):
        engine.get_task("default", "B")
    c = engine.get_task("default", "C")
    assert (c.state, c.last_error) == ("archived", "dependency B failed: deleted by console:otto")
    assert (audit[-1]["action"], audit[-1]["task_ids"]) == ("delete_task", ["B"])


def test_refusals_are_named_and_change_nothing(operator_client, engine, chain, audit):
    response = operator_client.post("/queues/default/batch/", {"action": "run", "task_ids": ["E", "A", "ghost"]})
    assert response.status_code == 302
    message = " ".join(texts(response))
    # Every refusal is reported with its reason, each reason with the ids it held back.
    assert "3 tasks refused, left as they were" in message
    assert "task is the on_error callback of workflow wf" in message
    assert "task is pending, it cannot be run now (1): A" in message
    assert "gone since the page was read (succeeded without retention, or deleted) (1): ghost" in message
    assert engine.get_task("default", "E").state == "waiting"
    assert audit == []


def test_bad_input_is_a_400_not_a_500(viewer_client, operator_client, chain):
    assert viewer_client.get("/queues/default/?state=waitin").status_code == 400
    response = operator_client.post("/queues/default/all/", {"action": "run_all", "state": "waiting"})
    assert response.status_code == 400  # bulk actions do not take waiting tasks: one by one, or selected
    assert operator_client.post("/queues/default/batch/", {"action": "wait", "task_ids": ["B"]}).status_code == 400


def test_the_dashboard_counts_waiting_tasks_in_the_size_and_its_chart(viewer_client, chain):
    body = viewer_client.get("/").content.decode()
    assert 'class="swatch c-waiting"' in body
    assert re.search(r'<rect class="c-waiting"[^>]*>\s*<title>[^<]*waiting: 3', body)
