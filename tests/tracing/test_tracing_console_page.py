"""The task page shows the producer's trace id, the last operator's, and each attempt's (the operator's for the
attempts after an action that recorded one), each a link into the viewer TASKS_CONSOLE_TRACE_URL names (a new
tab, rel="noopener") or plain text without it; an unusable template is the system check error taskq.E130."""

from __future__ import annotations

import re
import time

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse

from taskq.console.trace_links import check_trace_url, template_problem
from tests.console.console_support import logged_in, make_user

pytestmark = pytest.mark.django_db

PRODUCER = "0af7651916cd43dd8448eb211c80319c"
OPERATOR = "4bf92f3577b34da6a3ce929d0e0e4736"
JAEGER = "http://localhost:16686/trace/{trace_id}"


@pytest.fixture
def operator_client(db):
    return logged_in(make_user("otto", "view_console", "operate_console"))


@pytest.fixture
def run_twice(spans, operator_client, seed, engine):
    """A task enqueued in the producer's trace whose first attempt failed, run by an operator whose request sent
    its traceparent, and whose second attempt failed too."""
    task_id = seed.retry(headers={"traceparent": f"00-{PRODUCER}-b7ad6b7169203331-01"})
    page = operator_client.post(
        "/queues/default/batch/",
        {"action": "run", "task_ids": [task_id]},
        HTTP_TRACEPARENT=f"00-{OPERATOR}-00f067aa0ba902b7-01",
    )
    assert page.status_code == 302
    leased = seed.broker.run(seed.ops.dequeue("default", 1, 60, "test-worker", "tok-"))
    assert [t.id for t in leased] == [task_id]
    seed.broker.run(
        seed.ops.retry("default", task_id, leased[0].token, time.time() + 600, "again", worker="test-worker")
    )
    return task_id


def page_of(client, task_id: str) -> str:
    response = client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200
    return response.content.decode()


def traces(page: str, where: str) -> list[str]:
    """The trace ids shown in the elements ``data-trace=<where>``, in order."""
    cells = re.findall(rf'data-trace="{where}">(.*?)</(?:dd|td)>', page, re.S)
    return [next(iter(re.findall(r'data-trace-id="([0-9a-f]{32})"', cell)), "—") for cell in cells]


def test_the_page_shows_each_trace_id_as_text_without_the_setting(run_twice, operator_client):
    page = page_of(operator_client, run_twice)
    assert traces(page, "producer") == [PRODUCER] and traces(page, "operator") == [OPERATOR]
    assert traces(page, "attempt") == [PRODUCER, OPERATOR]  # the second attempt came after the run
    assert "<th>Trace</th>" in page and "/trace/" not in page
    assert f'<code data-trace-id="{OPERATOR}">{OPERATOR}</code>' in page


def test_with_the_setting_each_trace_id_links_into_the_viewer_in_a_new_tab(run_twice, operator_client, settings):
    settings.TASKS_CONSOLE_TRACE_URL = JAEGER
    page = page_of(operator_client, run_twice)
    links = re.findall(r'<a href="([^"]+)" target="_blank" rel="noopener" data-trace-id="([0-9a-f]+)"', page)
    expected = [PRODUCER, OPERATOR, PRODUCER, OPERATOR]  # the fields, then the attempts
    assert links == [(f"http://localhost:16686/trace/{t}", t) for t in expected]


def test_a_template_with_braces_of_its_own_is_filled_by_replacement(run_twice, operator_client, settings):
    settings.TASKS_CONSOLE_TRACE_URL = 'https://grafana.example/explore?left={"queries":[{"query":"{trace_id}"}]}'
    page = page_of(operator_client, run_twice)
    assert f"https://grafana.example/explore?left={{&quot;queries&quot;:[{{&quot;query&quot;:&quot;{PRODUCER}" in page


def test_an_unusable_template_shows_plain_ids(run_twice, operator_client, settings):
    settings.TASKS_CONSOLE_TRACE_URL = "javascript:alert({trace_id})"
    page = page_of(operator_client, run_twice)
    assert traces(page, "producer") == [PRODUCER] and "javascript:" not in page


def test_a_task_without_a_context_shows_no_trace(spans, operator_client, seed):
    task_id = seed.retry()
    page = page_of(operator_client, task_id)
    assert 'data-trace="' not in page and "<th>Trace</th>" not in page


def test_redaction_hides_the_trace_headers_only_where_a_rule_matches_them(run_twice, operator_client, settings):
    settings.TASKS_REDACT_PATTERNS = [r"(?i)password is \S+"]
    assert traces(page_of(operator_client, run_twice), "producer") == [PRODUCER]
    settings.TASKS_REDACT_PATTERNS = [PRODUCER]
    page = page_of(operator_client, run_twice)
    assert traces(page, "producer") == [] and traces(page, "operator") == [OPERATOR]


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("http://localhost:16686/trace/", "has no {trace_id}"),
        ("ftp://jaeger/trace/{trace_id}", "must be an http(s) URL"),
        ("/trace/{trace_id}", "must be an http(s) URL"),
        ("https:///{trace_id}", "must be an http(s) URL"),
        (42, "must be a URL template"),
    ],
)
def test_an_unusable_template_is_a_system_check_error(settings, template, problem):
    settings.TASKS_CONSOLE_TRACE_URL = template
    [error] = check_trace_url()
    assert error.id == "taskq.E130" and problem in error.msg and "TASKS_CONSOLE_TRACE_URL" in error.msg
    with pytest.raises(SystemCheckError, match="taskq.E130"):
        call_command("check")


@pytest.mark.parametrize(
    "template",
    [
        "",
        JAEGER,
        "https://ui.honeycomb.io/team/environments/prod/trace?trace_id={trace_id}",
        "http://tempo:3200/api/traces/{trace_id}",
    ],
)
def test_usable_templates_pass_the_check(settings, template):
    settings.TASKS_CONSOLE_TRACE_URL = template
    assert check_trace_url() == [] and template_problem(template) is None
