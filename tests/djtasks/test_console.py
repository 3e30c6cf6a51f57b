"""The console's task page for Django tasks: the function's module path, the call with its arguments, and the
framework's SUCCESSFUL or FAILED with the exception's class. Needs the console's apps, so the Django 6 run (whose
venv has none of them) skips it."""

from __future__ import annotations

import html

import pytest
from django.conf import settings
from django.urls import reverse

from tests.djtasks import tasks
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.usefixtures("tasks_settings"),
    pytest.mark.skipif("console" not in settings.INSTALLED_APPS, reason="the console's apps are not installed"),
]


def page(client, queue: str, task_id: str) -> str:
    response = client.get(reverse("taskq:task", kwargs={"queue": queue, "task_id": task_id}))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.mark.django_db
def test_the_task_page_shows_a_django_task_and_its_outcome(taskworker, django_capture_on_commit_callbacks):
    from tests.console.console_support import logged_in, make_user

    greet = tasks.greet.using(queue_name="djtasks-mail")
    # The test runs in a transaction, so the backend enqueues at its commit (which these callbacks stand for).
    with django_capture_on_commit_callbacks(execute=True) as written:
        ok, bad = greet.enqueue("ada", punctuation="?"), tasks.fail.enqueue("no stamps")
    assert len(written) == 2
    wait_for(lambda: greet.get_result(ok.id).is_finished and tasks.fail.get_result(bad.id).is_finished)
    viewer = logged_in(make_user("vera", "view_console"))

    shown = page(viewer, "djtasks-mail", ok.id)
    assert "tests.djtasks.tasks.greet" in shown
    assert 'greet("ada", punctuation="?")' in shown
    assert "SUCCESSFUL" in shown and "hello ada?" in shown

    shown = page(viewer, "default", bad.id)
    assert 'fail("no stamps")' in shown
    assert "FAILED" in shown and "tests.djtasks.tasks.Refused" in shown
