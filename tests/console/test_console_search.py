"""The search page: matches across queues, paged; a search that cannot be read is a 400 that says why; actions on
every match, confirmed with the count, audited, refused where the state does not allow them; access."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from queues.models import AuditLog

pytestmark = pytest.mark.django_db


def ids_on(body: str) -> list[str]:
    return re.findall(r'<td class="id"><a href="/queues/[^"]+/tasks/[^"]+/" title="([^"]+)"', body)


@pytest.fixture
def mixed(seed):
    archived = [seed.archived(queue="mail", task_type="email:deliver", error=f"SMTP 451 try {n}") for n in range(3)]
    retry = seed.retry(queue="mail", task_type="email:deliver", error="SMTP 550 no such user")
    other = seed.archived(queue="low", task_type="report:build", error="SMTP 451 odd")
    pending = seed.pending("email:deliver", {"to": "ada@example.com"}, queue="mail")
    return {"archived": archived, "retry": retry, "other": other, "pending": pending}


def test_search_across_queues_with_paging(viewer_client, mixed):
    body = viewer_client.get(reverse("search"), {"q": 'type:email:* error:"smtp 451"', "size": "10"}).content.decode()
    assert sorted(ids_on(body)) == sorted(mixed["archived"])
    assert "3 matches among" in body and "the search stopped at its bound" not in body
    page2 = viewer_client.get(reverse("search"), {"q": "type:email:*", "size": "10", "page": "1"}).content.decode()
    assert len(ids_on(page2)) == 5
    assert "Run all" not in body  # a viewer is offered no action
    assert 'name="q"' in viewer_client.get(reverse("search")).content.decode()  # the empty form


def test_matches_are_newest_first_with_the_state_badge_and_a_one_line_payload(viewer_client, mixed, engine):
    body = viewer_client.get(reverse("search"), {"q": "queue:mail", "size": "10"}).content.decode()
    # Newest first by creation time (tasks seeded within the same millisecond may come in either order).
    created = [engine.get_task("mail", task_id).created_at for task_id in ids_on(body)]
    assert len(created) == 5 and created == sorted(created, reverse=True)
    assert '<span class="badge state-retry">retry</span>' in body and "<td>retry</td>" not in body
    assert re.search(r'<td class="payload"><code title="[^"]*ada@example.com', body)


@pytest.mark.parametrize(
    ("query", "says"),
    [("colour:red", "unknown key"), ("state:sleeping", "unknown state"), ('error:"open', "not closed")],
)
def test_a_search_that_cannot_be_read_is_a_400_that_says_why(viewer_client, mixed, query, says):
    response = viewer_client.get(reverse("search"), {"q": query})
    assert response.status_code == 400 and says in response.content.decode()


@pytest.mark.parametrize("query", ["page=0", "size=7", "q=" + "x" * 1001])
def test_bad_paging_is_a_400(viewer_client, mixed, query):
    assert viewer_client.get(reverse("search") + "?" + query).status_code == 400


def test_an_action_on_every_match_is_audited_and_refused_where_the_state_does_not_allow_it(
    operator_client, mixed, engine
):
    page = operator_client.get(reverse("search"), {"q": "queue:mail"}).content.decode()
    # Counted per action: the pending match cannot be run, and nothing is active, so there is no "Cancel all".
    assert 'data-confirm-action="Run all 4 matching tasks whose state allows it? (The other matches' in page
    assert 'value="cancel"' not in page and ">Delete all 5</button>" in page
    response = operator_client.post(reverse("search-act"), {"q": "queue:mail", "action": "run"}, follow=True)
    text = response.content.decode()
    assert "4 matching tasks moved to pending" in text and "1 matching task refused" in text  # the pending one
    assert engine.queue_info("mail").pending == 5 and engine.queue_info("low").archived == 1
    entry = AuditLog.objects.get(action="search_run")
    assert entry.queue == "mail" and sorted(entry.task_ids) == sorted([*mixed["archived"], mixed["retry"]])
    assert "search 'queue:mail': 4 done, 1 refused" in entry.detail


def test_actions_are_for_operators_and_a_bad_action_or_search_changes_nothing(
    viewer_client, operator_client, mixed, engine
):
    assert viewer_client.post(reverse("search-act"), {"q": "queue:mail", "action": "delete"}).status_code == 403
    assert operator_client.get(reverse("search-act")).status_code == 405
    assert operator_client.post(reverse("search-act"), {"q": "queue:mail", "action": "explode"}).status_code == 400
    assert operator_client.post(reverse("search-act"), {"q": "colour:red", "action": "delete"}).status_code == 400
    assert engine.queue_info("mail").archived == 3 and not AuditLog.objects.exists()
