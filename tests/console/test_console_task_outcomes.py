"""Every action shows its outcome (issue 23): the page of a task that is gone but has events, bulk actions that
account for every task the confirmation named, retries in words, relative times and the navigation's section."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from taskq.queues.engine import TaskInfo
from taskq.queues.rendering import retries_text


def texts(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def visible(body: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_a_task_deleted_on_success_keeps_a_page_built_from_its_events(viewer_client, seed):
    task_id, token = seed.active()
    seed.broker.run(seed.ops.done("default", [(task_id, token)], "test-worker"))
    response = viewer_client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200
    body = visible(response.content.decode())
    assert "completed and deleted (no retention)" in body and "gone" in body
    assert "is no longer stored" in body and "Payload" not in body  # nothing is made up for what went with it
    assert re.search(r"Attempts 1 .*succeeded", body)  # its final attempt, from the stream


def test_a_task_an_operator_deleted_says_who_and_an_unknown_one_is_still_a_404(viewer_client, operator_client, seed):
    task_id = seed.pending()
    operator_client.post(reverse("taskq:task-batch", args=["default"]), {"action": "delete", "task_ids": [task_id]})
    body = visible(viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode())
    assert "deleted (deleted by console:otto)" in body
    missing = viewer_client.get(reverse("taskq:task", args=["default", "never-was"]))
    assert missing.status_code == 404
    assert 'class="current"' not in missing.content.decode()  # an error page is in no section of the navigation


def test_run_all_accounts_for_the_tasks_the_confirmation_named(operator_client, seed, engine):
    archived = [seed.archived() for _ in range(3)]
    engine.delete_task("default", archived[0])  # after the page was read: the operator confirmed 3
    response = operator_client.post(
        reverse("taskq:task-bulk", args=["default"]), {"action": "run_all", "state": "archived", "expected": 3}
    )
    said = texts(response)
    assert "2 archived tasks moved to pending" in said
    assert "You confirmed 3; 1 of them no longer were archived when the action ran" in said


def test_run_all_matching_names_the_match_that_went_and_each_refusal(operator_client, seed, engine):
    archived = [seed.archived(task_type="email:deliver") for _ in range(3)]
    engine.delete_task("default", archived[0])
    response = operator_client.post(
        reverse("taskq:task-bulk", args=["default"]),
        {"action": "run_all", "state": "archived", "type": "email:", "expected": 3},
    )
    said = texts(response)
    assert "2 matching tasks moved to pending" in said
    assert "You confirmed 3; 1 of them no longer matched when the action ran" in said


def test_a_search_action_names_every_task_it_refused_and_why(operator_client, seed):
    archived = seed.archived(queue="mail")  # first: seeding an archived task needs the queue's only pending one
    pending = seed.pending(queue="mail")
    response = operator_client.post(reverse("taskq:search-act"), {"q": "queue:mail", "action": "run", "expected": 2})
    said = texts(response)
    assert "1 matching task moved to pending" in said
    assert "1 matching task refused, left as it was — task is pending; run takes archived, retry, scheduled" in said
    assert pending in said and archived not in said


def test_bad_expected_counts_are_refused_and_change_nothing(operator_client, seed, engine):
    seed.archived()
    response = operator_client.post(
        reverse("taskq:task-bulk", args=["default"]), {"action": "run_all", "state": "archived", "expected": "-1"}
    )
    assert response.status_code == 400 and engine.queue_info("default").archived == 1


def task(
    state: str, retried: int, max_retry: int, failed_with_state: bool = True, ran: float | None = None
) -> TaskInfo:
    since = datetime(2024, 5, 1, 6, 25, 57, tzinfo=UTC)
    failed = since if failed_with_state else since - timedelta(hours=1)
    return TaskInfo("t", "x", "q", state, retried=retried, max_retry=max_retry, last_failed_at=failed,
                    state_since=since, last_run_seconds=ran)  # fmt: skip


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (task("archived", 3, 2), "retried 2 of 2, then archived"),  # read "3/2"
        (task("archived", 1, 5), "no retry (SkipRetry)"),  # read "1/5"
        (task("archived", 3, 5), "retried 2 of 5, then no retry (SkipRetry)"),
        (task("archived", 1, 5, failed_with_state=False), "archived by an operator after 1 failed attempt"),
        (task("archived", 0, 5), "archived before it ran"),  # a workflow member cancelled: read "no retry (SkipRetry)"
        (task("archived", 0, 5, ran=0.4), "archived with no failed attempt"),  # retried without failure, then archived
        (task("retry", 1, 2), "retry 1 of 2 due"),
        (task("retry", 0, 2), "retry due, not counted (0 of 2 used)"),
        (task("completed", 2, 2), "retried 2 of 2"),
        (task("pending", 0, 25), "retried 0 of 25"),
    ],
)
def test_retries_read_as_what_happened(info, words):
    assert retries_text(info) == words


def test_relative_times_say_just_now_below_a_minute():
    from taskq.console.templatetags.console_tags import ago, until

    now = datetime.now(tz=UTC)
    assert ago(now - timedelta(seconds=20)) == "just now"
    assert ago(now - timedelta(minutes=5, seconds=2)) == "5\xa0minutes ago"  # Django's timesince, unbroken
    assert until(now + timedelta(seconds=20)) == "in a few seconds"
    assert until(now - timedelta(seconds=1)) == "due now"
    assert until(now + timedelta(hours=2, seconds=5)) == "in 2\xa0hours"
    assert ago(None) == "—"


def test_queue_and_task_pages_are_under_queues_in_the_navigation(viewer_client, seed):
    task_id = seed.pending()
    for path in (reverse("taskq:queue", args=["default"]), reverse("taskq:task", args=["default", task_id])):
        current = re.findall(r'<a href="[^"]*" class="current">([^<]+)</a>', viewer_client.get(path).content.decode())
        assert current == ["Queues"], path
