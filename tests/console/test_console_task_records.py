"""A finished task's page stays readable while something refers to it: a task an operator edited or ran, then
deleted on success (no retention) or by the janitor after its retention, leaves a record its page renders, marked
as the record of a deleted task, once the queue's capped event stream no longer holds its events (a busy queue
trims them within a minute). The engine's scripts run for real; the stream is trimmed as a busy queue's would be."""

from __future__ import annotations

import re
import time

import pytest
from console_support import logged_in, make_user
from django.urls import reverse

from taskq.queues.engine import FakeClock, Keys
from taskq.queues.engine.broker import Broker

pytestmark = pytest.mark.django_db

Q = Keys().queue("default")


@pytest.fixture
def editor(db):
    return logged_in(make_user("edda", "view_console", "edit_task"))


def visible(body: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def lease_and_finish(seed, task_id: str) -> None:
    """A worker takes the task (the queue's only pending one) and acknowledges its success: no retention, so the
    task is deleted."""
    leased = seed.broker.run(seed.ops.dequeue("default", 1, 60, "host-1:42", "tok-"))
    assert [t.id for t in leased] == [task_id]
    assert seed.broker.run(seed.ops.done("default", [(task_id, leased[0].token)], "host-1:42")) == ["OK"]


def busy_queue_trimmed(redis_client) -> None:
    """What a busy queue's capped stream does to an old task's events within a minute: trims them away."""
    redis_client.xtrim(Q.events, maxlen=0, approximate=False)


def test_an_edited_task_deleted_on_success_keeps_its_page_with_the_failure_and_the_edit(
    editor, viewer_client, seed, engine, redis_client
):
    task_id = seed.archived(error="SMTP 550: mailbox unavailable")
    response = editor.post(
        reverse("taskq:task-edit", args=["default", task_id]),
        {"payload": '{"to": "bob@example.com"}', "encoding": "json"},
    )
    assert response.status_code == 302
    lease_and_finish(seed, task_id)
    busy_queue_trimmed(redis_client)

    response = viewer_client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200  # was a 404 once the stream had trimmed its events
    body = visible(response.content.decode())
    assert "The record of a deleted task." in body
    assert "completed and deleted (no retention)" in body
    assert "SMTP 550: mailbox unavailable" in body  # the earlier failure, in the fields and the attempts
    assert re.search(r"1 .*failed, archived SMTP 550: mailbox unavailable .*2 host-1:42 .*succeeded", body)
    assert re.search(r"Operator actions .* edda edit_task", body)  # the edit's audit entry stays on the page
    assert "edit (operator)" in body  # and the record's own trail names it, with who
    assert "Payload" not in body  # nothing is made up for what went with the task


def test_while_the_stream_holds_only_its_last_events_the_page_still_shows_the_earlier_failure(
    editor, viewer_client, seed, redis_client
):
    task_id = seed.archived(error="SMTP 550: mailbox unavailable")
    editor.post(reverse("taskq:task-edit", args=["default", task_id]), {"payload": "{}", "encoding": "json"})
    lease_and_finish(seed, task_id)
    # The stream has trimmed everything before the edit: the task's creation and its failed attempt.
    edit_id = next(i for i, f in redis_client.xrange(Q.events) if f[b"from"] == b"archived" and f[b"to"] == b"pending")
    redis_client.xtrim(Q.events, minid=edit_id, approximate=False)

    body = visible(viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode())
    assert "completed and deleted (no retention)" in body
    assert "SMTP 550: mailbox unavailable" in body  # was missing: the page showed the outcome only
    assert re.search(r"1 .*failed, archived .*2 .*succeeded", body)


def test_a_task_run_again_then_deleted_by_the_janitor_after_its_retention_keeps_a_record(
    operator_client, viewer_client, seed, redis_client
):
    task_id = seed.retry(error="SMTP 451: try later", retention=60)
    operator_client.post(reverse("taskq:task-batch", args=["default"]), {"action": "run", "task_ids": [task_id]})
    leased = seed.broker.run(seed.ops.dequeue("default", 1, 60, "host-1:42", "tok-"))
    seed.broker.run(seed.ops.complete("default", [(task_id, leased[0].token, 60.0)], "host-1:42"))
    janitor = Broker(seed.redis_url, clock=FakeClock(time.time() + 120))  # its retention (60 s) has passed
    try:
        assert janitor.run(janitor.transitions.delete_expired("default")) == 1
    finally:
        janitor.close()
    busy_queue_trimmed(redis_client)

    response = viewer_client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200
    body = visible(response.content.decode())
    assert "The record of a deleted task." in body
    assert "completed, then deleted when its retention ended" in body
    assert "SMTP 451: try later" in body and "run (operator)" in body and "console:otto" in body


def test_a_task_no_one_acted_on_leaves_no_record_and_its_page_is_a_404_once_its_events_are_gone(
    viewer_client, seed, redis_client
):
    task_id, token = seed.active()
    seed.broker.run(seed.ops.done("default", [(task_id, token)], "host-1:42"))
    assert redis_client.exists(Q.task_record(task_id)) == 0  # no memory for tasks nothing refers to
    busy_queue_trimmed(redis_client)
    assert viewer_client.get(reverse("taskq:task", args=["default", task_id])).status_code == 404


@pytest.mark.parametrize(("seconds", "ttl_ms"), [(None, 3_600_000), (7200, 7_200_000)])
def test_the_record_is_kept_as_long_as_the_setting_says(editor, seed, redis_client, settings, seconds, ttl_ms):
    if seconds is not None:
        settings.TASKS_TASK_RECORD_SECONDS = seconds
    task_id = seed.archived()
    editor.post(reverse("taskq:task-edit", args=["default", task_id]), {"payload": "{}", "encoding": "json"})
    lease_and_finish(seed, task_id)
    assert ttl_ms - 60_000 < redis_client.pttl(Q.task_record(task_id)) <= ttl_ms  # an hour by default


def test_end_to_end_a_real_worker_fails_the_task_the_editor_fixes_it_and_the_page_outlives_its_events(
    editor, viewer_client, seed, engine, redis_client, redis_url
):
    """The issue's steps with a real worker: its handler refuses a bad address (archived, SkipRetry), the editor
    edits the payload and runs it, the worker succeeds and deletes it (no retention), the busy queue trims its
    events; the page still shows the failure, the success and the edit."""
    from taskq.queues.engine import Registry, SkipRetry, Task, handler
    from taskq.worker.config import WorkerConfig
    from taskq.worker.server import Server
    from tests.waiting import wait_for
    from tests.worker.worker_support import FAST, running_servers

    registry = Registry()

    @handler("email:deliver", registry=registry)
    def deliver(task: Task) -> None:
        if task.json()["to"] == "nobody@example.com":
            raise SkipRetry("SMTP 550: mailbox unavailable")

    task_id = seed.pending(payload={"to": "nobody@example.com"})
    with running_servers() as launch:
        server = launch(Server(WorkerConfig(redis_url=redis_url, **FAST), registry))
        wait_for(lambda: engine.get_task("default", task_id).state == "archived", what="the failure archived it")
        edit = {"payload": '{"to": "bob@example.com"}', "encoding": "json"}
        assert editor.post(reverse("taskq:task-edit", args=["default", task_id]), edit).status_code == 302
        wait_for(lambda: not redis_client.exists(Q.task(task_id)), what="the worker ran it and deleted it")
    busy_queue_trimmed(redis_client)

    response = viewer_client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200
    body = visible(response.content.decode())
    assert "The record of a deleted task." in body and "completed and deleted (no retention)" in body
    assert re.search(
        rf"1 .*failed, archived .*SMTP 550: mailbox unavailable .*2 {re.escape(server.config.server_id)} .*succeeded",
        body,
    )
    assert re.search(r"Operator actions .* edda edit_task", body) and "edit (operator)" in body
