"""The search page: matches across queues, paged; a search that cannot be read is a 400 that says why; actions on
every match, confirmed with the count, audited, refused where the state does not allow them; access."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from taskq.queues.models import AuditLog

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
    body = viewer_client.get(
        reverse("taskq:search"), {"q": 'type:email:* error:"smtp 451"', "size": "10"}
    ).content.decode()
    assert sorted(ids_on(body)) == sorted(mixed["archived"])
    assert "3 matches among" in body and "the search stopped at its bound" not in body
    page2 = viewer_client.get(
        reverse("taskq:search"), {"q": "type:email:*", "size": "10", "page": "1"}
    ).content.decode()
    assert len(ids_on(page2)) == 5
    assert "Run all" not in body  # a viewer is offered no action
    assert 'name="q"' in viewer_client.get(reverse("taskq:search")).content.decode()  # the empty form


def test_matches_are_newest_first_with_the_state_badge_and_a_one_line_payload(viewer_client, mixed, engine):
    body = viewer_client.get(reverse("taskq:search"), {"q": "queue:mail", "size": "10"}).content.decode()
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
    response = viewer_client.get(reverse("taskq:search"), {"q": query})
    assert response.status_code == 400 and says in response.content.decode()


@pytest.mark.parametrize("query", ["page=0", "size=7", "q=" + "x" * 1001])
def test_bad_paging_is_a_400(viewer_client, mixed, query):
    assert viewer_client.get(reverse("taskq:search") + "?" + query).status_code == 400


def test_an_action_on_every_match_is_audited_and_refused_where_the_state_does_not_allow_it(
    operator_client, mixed, engine
):
    page = operator_client.get(reverse("taskq:search"), {"q": "queue:mail"}).content.decode()
    # Counted per action: the pending match cannot be run, and nothing is active, so there is no "Cancel all".
    assert 'data-confirm-action="Run all 4 matching tasks whose state allows it? (The other matches' in page
    assert 'value="cancel"' not in page and ">Delete all 5</button>" in page
    response = operator_client.post(reverse("taskq:search-act"), {"q": "queue:mail", "action": "run"}, follow=True)
    text = response.content.decode()
    assert "4 matching tasks moved to pending" in text and "1 matching task refused" in text  # the pending one
    assert engine.queue_info("mail").pending == 5 and engine.queue_info("low").archived == 1
    entry = AuditLog.objects.get(action="search_run")
    assert entry.queue == "mail" and sorted(entry.task_ids) == sorted([*mixed["archived"], mixed["retry"]])
    assert 'search "queue:mail": 4 done, 1 refused' in entry.detail


def test_actions_are_for_operators_and_a_bad_action_or_search_changes_nothing(
    viewer_client, operator_client, mixed, engine
):
    assert viewer_client.post(reverse("taskq:search-act"), {"q": "queue:mail", "action": "delete"}).status_code == 403
    assert operator_client.get(reverse("taskq:search-act")).status_code == 405
    assert (
        operator_client.post(reverse("taskq:search-act"), {"q": "queue:mail", "action": "explode"}).status_code == 400
    )
    assert operator_client.post(reverse("taskq:search-act"), {"q": "colour:red", "action": "delete"}).status_code == 400
    assert engine.queue_info("mail").archived == 3 and not AuditLog.objects.exists()


def completions(client, q: str, **params) -> tuple[int, dict]:
    response = client.get(reverse("taskq:search-complete"), {"q": q, **params})
    assert response["Content-Type"] == "application/json"
    return response.status_code, response.json()


def test_the_query_box_completes_keys_then_values_at_the_cursor(viewer_client, mixed):
    status, reply = completions(viewer_client, "state:retry qu error:x", cursor="14")
    assert status == 200 and (reply["start"], reply["end"]) == (12, 14)
    assert reply["options"] == [{"text": "queue:", "label": "queue:", "detail": "queues, by name or glob pattern"}]
    assert [o["label"] for o in completions(viewer_client, "queue:")[1]["options"]] == ["low", "mail"]  # the end
    assert [o["text"] for o in completions(viewer_client, "queue:mail type:em")[1]["options"]] == [
        "type:email:deliver "
    ]
    assert [o["label"] for o in completions(viewer_client, "payload.")[1]["options"]] == ["payload.to:"]
    page = viewer_client.get(reverse("taskq:search")).content.decode()
    assert 'data-complete="/search/complete/"' in page and 'aria-controls="search-q-options"' in page
    # The combobox role is query_box.js's to give: without JavaScript the box is a plain search input in a GET form.
    assert 'role="combobox"' not in page and '<form method="get" class="toolbar" role="search"' in page


def test_the_query_box_offers_masked_payloads_keys_never_their_values(viewer_client, seed, settings):
    settings.TASKS_REDACT = {"types": ["billing:"], "keys": ["card"]}
    seed.pending("shop:order", {"customer": {"id": 7}, "card": {"number": "4111-1111"}}, queue="shop")
    seed.pending("billing:charge", {"iban": "DE89 3704"}, queue="shop")
    status, reply = completions(viewer_client, "payload.")
    assert status == 200 and [o["label"] for o in reply["options"]] == [
        "payload.card:", "payload.customer:", "payload.customer.id:"]  # fmt: skip
    for q in ("payload.card:", "payload.card.", "payload.card:4", "payload.", "queue:shop payload.i"):
        body = viewer_client.get(reverse("taskq:search-complete"), {"q": q}).content.decode()
        assert "4111" not in body and "number" not in body and "iban" not in body and "DE89" not in body


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"q": "queue:", "cursor": "7"}, "cursor: a position in the search, 0 to its length (6)"),
        ({"q": "queue:", "cursor": "x"}, "cursor: Enter a whole number."),
        ({"q": "queue:", "cursor": "-1"}, "cursor: "),
        ({"q": "x" * 1001}, "q: Ensure this value has at most 1000 characters"),
    ],
)
def test_bad_input_to_the_query_box_is_a_400_that_says_why(viewer_client, mixed, params, says):
    response = viewer_client.get(reverse("taskq:search-complete"), params)
    assert response.status_code == 400 and response.json()["error"].startswith(says)


def test_the_query_box_is_for_viewers_and_reads_only(client, nobody_client, viewer_client, mixed):
    assert client.get(reverse("taskq:search-complete"), {"q": "queue:"}).status_code == 302  # to the login page
    assert nobody_client.get(reverse("taskq:search-complete"), {"q": "queue:"}).status_code == 403
    assert viewer_client.post(reverse("taskq:search-complete"), {"q": "queue:"}).status_code == 405
    # A search that cannot be read whole still completes (it is half written); submitting it is a 400 that says
    # what and where, as before.
    assert [o["label"] for o in completions(viewer_client, "state:sleeping queue:m")[1]["options"]] == ["mail"]
    refused = viewer_client.get(reverse("taskq:search"), {"q": "state:sleeping queue:mail"})
    assert refused.status_code == 400
    assert "unknown state &quot;sleeping&quot;; states are pending" in refused.content.decode()
    assert "(at character 1 of the search" in refused.content.decode()
