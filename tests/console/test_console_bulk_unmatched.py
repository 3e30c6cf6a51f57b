"""Run, archive or delete all matching, from a queue tab's filter: the page posts the ids it confirmed with their
count, so the action names each confirmed task that no longer matched when it ran, and why (gone, in another state
now, or no longer matching the filter), as a search's action names each refusal; and its audit entry counts them
("1 done, 0 refused, 2 no longer matched (skipped)"), rather than "1 done, 0 refused"."""

from __future__ import annotations

import html
import re
import time

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from taskq.queues.models import AuditLog

pytestmark = pytest.mark.django_db


def texts(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def confirmed_form(client, state: str, task_type: str, action: str) -> dict[str, str]:
    """The hidden fields of the bulk bar's form for ``action``, as the queue page renders them for a filter."""
    page = client.get(reverse("taskq:queue", args=["default"]), {"state": state, "type": task_type}).content.decode()
    for form in re.findall(
        r"<form[^>]*task-bulk[^>]*>.*?</form>",
        page.replace(reverse("taskq:task-bulk", args=["default"]), "task-bulk"),
        re.S,
    ):
        fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
        if fields.get("action") == action:
            return {name: html.unescape(value) for name, value in fields.items() if name != "csrfmiddlewaretoken"}
    raise AssertionError(f"no {action} form on the page")


def test_run_all_matching_names_each_task_that_no_longer_matched_and_why(operator_client, seed, engine, audit):
    ids = [seed.retry(task_type="email:deliver") for _ in range(4)]
    form = confirmed_form(operator_client, "retry", "email:", "run_all")
    assert form["expected"] == "4" and form["type"] == "email:"
    # Since the page was read: one ran (to pending), one was deleted, one was edited into another type.
    engine.run_task("default", ids[0])
    engine.delete_task("default", ids[1])
    engine.edit_task("default", ids[2], b"{}", task_type="sms:deliver")
    engine.archive_task("default", ids[2])  # out of pending again, but not into the tab's state
    response = operator_client.post(reverse("taskq:task-bulk", args=["default"]), form)
    said = texts(response)
    assert "1 matching task moved to pending" in said
    assert "You confirmed 4; 3 of them no longer matched when the action ran and were left alone" in said
    assert f"now pending, no longer retry (1): {ids[0]}" in said
    assert f"gone since the page was read (succeeded without retention, or deleted) (1): {ids[1]}" in said
    assert f"now archived, no longer retry (1): {ids[2]}" in said
    (entry,) = [c for c in audit if c["action"] == "filter_run"]
    assert entry["task_ids"] == [ids[3]]
    assert entry["detail"].endswith(": 1 done, 0 refused, 3 no longer matched (skipped)")
    assert AuditLog.objects.get(action="filter_run").detail == entry["detail"]


def test_a_task_still_in_the_tab_that_no_longer_matches_the_filter_is_named(operator_client, seed, engine):
    ids = [seed.retry(task_type="email:deliver") for _ in range(2)]
    form = confirmed_form(operator_client, "retry", "email:", "delete_all")
    # Since the page was read: edited into another type, run, and failed again into retry.
    engine.edit_task("default", ids[0], b"{}", task_type="sms:deliver")
    (leased,) = seed.broker.run(seed.ops.dequeue("default", 1, 60, "host-1:42", "tok-"))
    seed.broker.run(seed.ops.retry("default", ids[0], leased.token, time.time() + 600, "again", worker="host-1:42"))
    said = texts(operator_client.post(reverse("taskq:task-bulk", args=["default"]), form))
    assert "1 matching task deleted" in said
    assert f"no longer matches the filter (1): {ids[0]}" in said
    assert engine.get_task("default", ids[0]).state == "retry"  # left alone


def test_new_matches_are_still_included_and_said(operator_client, seed, engine, audit):
    first = seed.retry(task_type="email:deliver")
    form = confirmed_form(operator_client, "retry", "email:", "archive_all")
    engine.delete_task("default", first)
    seed.retry(task_type="email:deliver")
    seed.retry(task_type="email:deliver")
    said = texts(operator_client.post(reverse("taskq:task-bulk", args=["default"]), form))
    assert "2 matching tasks archived" in said
    assert "You confirmed 1; 1 of them no longer matched" in said and first in said
    assert "2 more matched by the time the action ran, and were included." in said


def test_without_the_ids_the_audit_entry_still_counts_the_ones_that_went(operator_client, seed, engine, audit):
    ids = [seed.retry(task_type="email:deliver") for _ in range(3)]
    engine.delete_task("default", ids[0])
    response = operator_client.post(
        reverse("taskq:task-bulk", args=["default"]),
        {"action": "run_all", "state": "retry", "type": "email:", "expected": 3},
    )
    assert "You confirmed 3; 1 of them no longer matched" in texts(response)
    (entry,) = [c for c in audit if c["action"] == "filter_run"]
    assert entry["detail"].endswith(": 2 done, 0 refused, 1 no longer matched (skipped)")


@pytest.mark.parametrize(
    ("confirmed", "error"),
    [
        ("not json", "expected a JSON array of task ids"),
        ('{"a": 1}', "expected a JSON array of task ids"),
        ("[1, 2]", "expected a JSON array of task ids"),
        ('[""]', "a task id is 1 to 128 characters long"),
        ('["' + "x" * 129 + '"]', "a task id is 1 to 128 characters long"),
        ("[" + ",".join(['"a"'] * 1001) + "]", "at most 1000 task ids, got 1001"),
    ],
)
def test_bad_confirmed_ids_are_refused_and_change_nothing(operator_client, seed, engine, audit, confirmed, error):
    task_id = seed.retry(task_type="email:deliver")
    response = operator_client.post(
        reverse("taskq:task-bulk", args=["default"]),
        {"action": "delete_all", "state": "retry", "type": "email:", "expected": 1, "confirmed": confirmed},
    )
    assert response.status_code == 400
    assert f"confirmed: {error}" in html.unescape(response.content.decode())
    assert engine.get_task("default", task_id).state == "retry" and audit == []


def test_a_whole_tab_s_action_counts_in_its_audit_entry_the_tasks_that_went(operator_client, seed, engine, audit):
    archived = [seed.archived() for _ in range(3)]
    engine.delete_task("default", archived[0])  # after the page was read: the operator confirmed 3
    operator_client.post(
        reverse("taskq:task-bulk", args=["default"]), {"action": "run_all", "state": "archived", "expected": 3}
    )
    (entry,) = [c for c in audit if c["action"] == "run_all"]
    assert entry["detail"] == "state=archived; confirmed 3, 1 no longer archived (skipped)"
    assert entry["task_count"] == 2
