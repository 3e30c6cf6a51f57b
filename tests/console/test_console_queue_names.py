"""Queue names the console can route (issue 22): a queue named '..' or '*' that is already in Redis (enqueue
refuses such names now; an older taskq or another client wrote it) is listed, its page opens at its escaped URL
('/queues/~2E~2E/'), Pause works and its tasks can be deleted; task ids '.' and '..' route too; the commands the
console suggests quote the name and match only that queue; the edit form and the admin refuse such names."""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable

import pytest
from console_support import logged_in, make_user
from django.core.exceptions import ValidationError
from django.urls import reverse

from taskq.queues.engine import validation
from taskq.queues.models import QueueDefinition, RetentionPolicy
from taskq.worker.config import parse_queues, split_patterns
from taskq.worker.patterns import resolve

pytestmark = pytest.mark.django_db

OLD_NAMES = ["..", "*"]


@pytest.fixture
def older_engine(seed, monkeypatch) -> Callable[..., str]:
    """``enqueue(queue, **options)`` as a taskq from before the rule wrote tasks: without the new-name check."""

    def enqueue(queue: str, **options: object) -> str:
        with monkeypatch.context() as m:
            m.setattr(validation, "new_queue_name", validation.queue_name)
            return seed.pending(queue=queue, **options)

    return enqueue


@pytest.mark.parametrize(("name", "segment"), [("..", "~2E~2E"), (".", "~2E"), ("*", "*"), ("a.b", "a.b")])
def test_urls_write_dot_segments_escaped(name, segment):
    assert reverse("taskq:queue", args=[name]) == f"/queues/{segment}/"
    assert reverse("taskq:task", args=["q", name]) == f"/queues/q/tasks/{segment}/"


@pytest.mark.parametrize("name", OLD_NAMES)
def test_an_old_queue_is_listed_opens_pauses_and_its_tasks_delete(operator_client, older_engine, engine, name):
    task_id = older_engine(name)
    url = reverse("taskq:queue", args=[name])
    dashboard = operator_client.get("/").content.decode()
    assert f'href="{url}"' in dashboard
    page = operator_client.get(url, {"state": "pending"})
    assert page.status_code == 200 and reverse("taskq:task", args=[name, task_id]) in page.content.decode()
    task_page = operator_client.get(reverse("taskq:task", args=[name, task_id]))
    assert task_page.status_code == 200
    response = operator_client.post(reverse("taskq:queue-pause", args=[name]), {"next": url})
    assert response.status_code == 302 and response["Location"] == url
    assert engine.queue_info(name).paused
    response = operator_client.post(
        reverse("taskq:task-batch", args=[name]), {"action": "delete", "task_ids": [task_id]}
    )
    assert response.status_code == 302
    assert engine.queue_info(name).pending == 0


def test_task_ids_that_are_dots_route(operator_client, seed, engine):
    for task_id in (".", ".."):
        seed.pending(task_id=task_id)
        page = operator_client.get(reverse("taskq:task", args=["default", task_id]))
        assert page.status_code == 200 and f"/queues/default/tasks/{'~2E' * len(task_id)}/" == page.request["PATH_INFO"]


def suggested(page: str, queue: str) -> str:
    """The ``taskworker --queues`` argument the unserved banner suggests for ``queue``."""
    item = re.search(rf'data-unserved-queue="{re.escape(html.escape(queue))}".*?</li>', page, re.S)
    assert item, queue
    found = re.search(r"<code>taskworker --queues (.*?)</code>", item.group(0))
    assert found
    return html.unescape(found.group(1))


def test_the_unserved_banner_quotes_names_and_matches_only_that_queue(viewer_client, older_engine, seed):
    older_engine("*")
    for queue in ("has space", "tenant-a", "tenant-b"):
        seed.pending(queue=queue)
    for url in ("/", reverse("taskq:queue", args=["*"])):
        page = viewer_client.get(url).content.decode()
        assert suggested(page, "*") == "'[*]'"
    page = viewer_client.get("/").content.decode()
    assert suggested(page, "has space") == "'has space'"
    assert suggested(page, "tenant-a") == "tenant-a"
    # What the shell hands taskworker serves exactly the named queue.
    known = ["*", "has space", "tenant-a", "tenant-b"]
    for queue in ("*", "has space"):
        [argument] = shlex.split(suggested(page, queue))
        names, patterns = split_patterns(parse_queues(argument))
        assert list(resolve(names, patterns, known)) == [queue]


@pytest.fixture
def editor(db):
    return logged_in(make_user("edda", "view_console", "edit_task"))


@pytest.mark.parametrize("to_queue", ["..", ".", "*", "tenant-?", "a[b]"])
def test_the_edit_form_refuses_a_new_queue_with_such_a_name(editor, seed, engine, to_queue):
    task_id = seed.archived()
    response = editor.post(
        reverse("taskq:task-edit", args=["default", task_id]), {"payload": "{}", "encoding": "json", "queue": to_queue}
    )
    assert response.status_code == 400
    assert "for new tasks" in html.unescape(response.content.decode())
    assert engine.get_task("default", task_id).state == "archived"


def test_a_task_of_an_old_queue_can_be_edited_in_place(editor, seed, engine, monkeypatch):
    with monkeypatch.context() as m:  # as a taskq from before the rule wrote it
        m.setattr(validation, "new_queue_name", validation.queue_name)
        task_id = seed.archived(queue="*")
    response = editor.post(reverse("taskq:task-edit", args=["*", task_id]), {"payload": "{}", "encoding": "json"})
    assert response.status_code == 302 and response.url == reverse("taskq:task", args=["*", task_id])
    assert engine.get_task("*", task_id).state == "pending"


@pytest.mark.parametrize("name", ["..", "*", "tenant-[ab]"])
def test_the_admin_refuses_such_names_for_definitions(name):
    with pytest.raises(ValidationError, match="for new tasks"):
        QueueDefinition(name=name).full_clean()
    with pytest.raises(ValidationError, match="for new tasks"):
        RetentionPolicy(queue=name).full_clean()
    QueueDefinition(name="team/jobs").full_clean()
