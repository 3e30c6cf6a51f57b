"""The console's context processor: a project need not install it (the console's views supply its values), and
installed in a project's TEMPLATES, where it runs for every page the project renders, it may touch the database only
on the console's own pages."""

from __future__ import annotations

import copy
import re

import pytest
from console_support import logged_in, make_user
from django.db import connection
from django.test.utils import CaptureQueriesContext

from taskq.console.models import ConsolePreference

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.console.project_urls")]

PROCESSOR = "taskq.console.context_processors.console"


def without_the_processor(settings) -> None:
    templates = copy.deepcopy(settings.TEMPLATES)
    templates[0]["OPTIONS"]["context_processors"].remove(PROCESSOR)
    settings.TEMPLATES = templates


def with_the_processor(settings) -> None:
    """As a project that lists the processor in its TEMPLATES (it need not: the console's views supply what it
    gives)."""
    templates = copy.deepcopy(settings.TEMPLATES)
    templates[0]["OPTIONS"]["context_processors"].append(PROCESSOR)
    settings.TEMPLATES = templates


def statements(client, url: str) -> tuple[str, list[str]]:
    """The page, and each query it made as the tables it read (literals, such as the session's expiry, vary)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    tables = [" ".join(re.findall(r'(?:FROM|JOIN) "(\w+)"', query["sql"])) for query in captured.captured_queries]
    return response.content.decode(), tables


@pytest.mark.parametrize("codenames", [(), ("view_console",), ("view_console", "operate_console")])
def test_a_project_page_makes_no_query_for_the_console(settings, codenames):
    """The same page, by the same signed-in user (a stranger to the console, a viewer, an operator with a saved
    theme), makes the same queries with the processor installed as without it: none is the console's."""
    user = make_user("ada", *codenames)
    ConsolePreference.objects.create(user=user, theme="dark")
    client = logged_in(user)
    with_the_processor(settings)
    page, installed = statements(client, "/shop/")
    assert "Signed in as ada." in page
    without_the_processor(settings)
    _, bare = statements(client, "/shop/")
    assert installed == bare
    assert installed == ["django_session", "auth_user"]  # the session and the user the page shows, nothing else


def test_a_console_page_gets_what_the_processor_provides_without_it(settings, seed):
    """A project need not list the processor: the console's own pages still get the user's theme, their
    permissions and the summary bar, from the console's views."""
    assert PROCESSOR not in settings.TEMPLATES[0]["OPTIONS"]["context_processors"]
    operator = make_user("otto", "view_console", "operate_console")
    ConsolePreference.objects.create(user=operator, theme="dark")
    client = logged_in(operator)
    page, queries = statements(client, "/")
    assert 'data-theme="dark"' in page
    assert 'class="summary-bar"' in page
    assert "taskq_console_consolepreference" in queries
    viewer = make_user("vera", "view_console")
    ConsolePreference.objects.create(user=viewer, theme="light")
    seed.pending()
    operator_page = client.get("/queues/default/?state=pending").content.decode()
    viewer_page = logged_in(viewer).get("/queues/default/?state=pending").content.decode()
    assert 'data-theme="light"' in viewer_page
    pause = 'action="/queues/default/pause/"'
    assert pause in operator_page and pause not in viewer_page  # can_operate, from the processor
