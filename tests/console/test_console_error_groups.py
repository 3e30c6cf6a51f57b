"""Errors an operator can act on: the error groups on the queue page and the task type page (count, first and
last seen, a sample task linked or marked gone, a link to the matching tasks), the search term that link uses,
and the folded traceback on the task page. Bad input (a malformed fingerprint) is a named 400. Real Redis; the
failures are written by the retry and archive scripts as the worker's acker writes them."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from taskq.queues.engine.failures import Failure

pytestmark = pytest.mark.django_db

DECLINED = Failure(
    "ValueError",
    "card 4242 declined",
    "shop.tasks:charge",
    "Traceback (most recent call last):\n  ...\nValueError: x\n",
)
TIMEOUT = Failure("TimeoutError", "gateway timed out after 30 s", "shop.tasks:charge", "tb")
MISSING = Failure("KeyError", "'sku'", "shop.tasks:ship", "tb")


def group_rows(body: str) -> dict[str, str]:
    """The error table's rows by fingerprint."""
    return dict(re.findall(r'<tr data-fingerprint="([0-9a-f]{16})">(.*?)</tr>', body, re.S))


def search_link(row: str) -> str:
    (href,) = re.findall(r'<a href="(/search/\?q=[^"]+)"', row)
    return parse_qs(urlparse(unescape(href)).query)["q"][0]


@pytest.fixture
def failures(seed):
    """Two tasks of shop:charge failed alike (other card numbers), one otherwise, one shop:ship task failed."""
    first = seed.retry(failure=DECLINED, task_type="shop:charge")
    same = Failure("ValueError", "card 1111 declined", "shop.tasks:charge", "tb 2")
    latest = seed.archived(failure=same, task_type="shop:charge")
    timed_out = seed.retry(failure=TIMEOUT, task_type="shop:charge")
    shipped = seed.archived(failure=MISSING, task_type="shop:ship")
    return {"first": first, "latest": latest, "timed_out": timed_out, "shipped": shipped}


def test_the_queue_page_groups_identical_failures(viewer_client, failures):
    body = viewer_client.get(reverse("taskq:queue", args=["default"])).content.decode()
    rows = group_rows(body)
    assert set(rows) == {DECLINED.fingerprint, TIMEOUT.fingerprint, MISSING.fingerprint}
    declined = rows[DECLINED.fingerprint]
    assert "ValueError: card &lt;n&gt; declined" in declined
    assert "in shop.tasks:charge" in declined
    assert '<td class="num">2</td>' in declined
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>\s*<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</td>", declined)
    # the sample is the latest task of the group, linked to its page
    assert f'href="{reverse("taskq:task", args=["default", failures["latest"]])}"' in declined
    assert "shop:ship" in rows[MISSING.fingerprint] and "shop:ship" not in declined


def test_a_sample_task_that_is_gone_shows_its_id_marked_gone(viewer_client, failures, engine):
    engine.delete_task("default", failures["shipped"])
    row = group_rows(viewer_client.get(reverse("taskq:queue", args=["default"])).content.decode())[MISSING.fingerprint]
    assert f"<code>{failures['shipped']}</code>" in row and ">gone</span>" in row
    assert reverse("taskq:task", args=["default", failures["shipped"]]) not in row


def test_the_task_type_page_lists_its_own_groups_only(viewer_client, failures):
    body = viewer_client.get(reverse("taskq:task-type", args=["default", "shop:charge"])).content.decode()
    assert set(group_rows(body)) == {DECLINED.fingerprint, TIMEOUT.fingerprint}


def test_the_group_links_to_its_matching_tasks(viewer_client, failures):
    rows = group_rows(viewer_client.get(reverse("taskq:queue", args=["default"])).content.decode())
    query = search_link(rows[DECLINED.fingerprint])
    assert query == f'queue:"default" type:"shop:charge" fingerprint:{DECLINED.fingerprint}'
    found = viewer_client.get(reverse("taskq:search"), {"q": query})
    assert found.status_code == 200
    ids = set(re.findall(r"/queues/default/tasks/([\w-]+)/", found.content.decode()))
    assert ids == {failures["first"], failures["latest"]}


def test_no_failure_says_so(viewer_client, seed):
    seed.retry(task_type="shop:charge")  # a failure without a captured exception (a lease that expired)
    body = viewer_client.get(reverse("taskq:queue", args=["default"])).content.decode()
    assert group_rows(body) == {} and "No failure recorded in this queue." in body


@pytest.mark.parametrize("value", ["zzzz", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", '"drop table"'])
def test_a_malformed_fingerprint_is_a_named_400(viewer_client, seed, value):
    response = viewer_client.get(reverse("taskq:search"), {"q": f"fingerprint:{value}"})
    assert response.status_code == 400
    assert "an error fingerprint is 16 hex digits" in response.content.decode()


def test_the_task_page_folds_the_traceback(viewer_client, failures):
    body = viewer_client.get(reverse("taskq:task", args=["default", failures["first"]])).content.decode()
    match = re.search(
        r'<details class="traceback"><summary>Traceback</summary><pre class="error-text">(.*?)</pre>', body, re.S
    )
    assert match and unescape(match.group(1)) == DECLINED.traceback
    assert "same error" in body


def test_a_task_without_traceback_shows_none(viewer_client, seed):
    task_id = seed.retry()
    body = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert '<details class="traceback">' not in body and "same error" not in body
