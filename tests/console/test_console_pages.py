"""Every page renders what it promises, against real Redis."""

from __future__ import annotations

import re

import pytest
from console_support import logged_in, make_user
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_dashboard_shows_queues_charts_and_period_switch(viewer_client, seed):
    seed.archived(queue="critical")
    seed.pending(queue="default")
    seed.pending(queue="critical")
    response = viewer_client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "<svg" in body and "Queue size by state" in body and "Processed and failed" in body
    assert 'href="/queues/critical/"' in body and 'href="/queues/default/"' in body
    for days in (1, 7, 30, 90):
        assert f'href="?days={days}"' in body
    assert "Pause" not in body  # a viewer is offered no action
    response = viewer_client.get("/?days=30")
    assert response.status_code == 200
    assert "last 30 days" in response.content.decode()


def test_dashboard_offers_actions_to_operators(operator_client, seed):
    seed.pending(queue="default")
    body = operator_client.get("/").content.decode()
    assert 'action="/queues/default/pause/"' in body
    assert 'action="/queues/default/delete/"' in body and "data-confirm" in body


def test_dashboard_error_rate(viewer_client, seed):
    seed.archived(queue="default")  # failed today: 1, processed today: 1
    body = viewer_client.get("/").content.decode()
    assert "100.00 %" in body


def test_dashboard_leaves_a_place_for_other_systems(viewer_client, engine):
    from django.template.loader import get_template

    source = get_template("taskq/dashboard.html").template.source
    assert "{% block rq %}" in source


def test_queue_page_banner_tabs_and_types(viewer_client, seed):
    seed.pending(task_type="email:deliver")
    seed.pending(task_type="image:resize")
    seed.scheduled()
    response = viewer_client.get("/queues/default/")
    assert response.status_code == 200
    body = response.content.decode()
    for state in ("active", "pending", "aggregating", "scheduled", "retry", "archived", "completed"):
        assert f"?state={state}" in body
    assert "Memory" in body and "Latency" in body
    assert "email:deliver" in body and "image:resize" in body  # the per-type breakdown
    pending = viewer_client.get("/queues/default/?state=pending").content.decode()
    assert pending.count('class="copy"') == 2


@pytest.mark.parametrize("state", ["active", "pending", "aggregating", "scheduled", "retry", "archived", "completed"])
def test_every_state_tab_renders(viewer_client, seed, state):
    seed.retry(queue="other")
    seed.archived(queue="other")
    seed.completed(queue="other2")
    seed.active()
    seed.scheduled()
    assert viewer_client.get(f"/queues/default/?state={state}").status_code == 200
    assert viewer_client.get(f"/queues/other/?state={state}").status_code == 200


def test_paging_uses_the_users_rows_per_page(viewer, viewer_client, seed):
    from taskq.console.models import ConsolePreference

    ConsolePreference.objects.create(user=viewer, rows_per_page=10)
    ids = [seed.pending() for _ in range(25)]
    body = viewer_client.get("/queues/default/?state=pending").content.decode()
    assert body.count('name="task_ids"') == 0  # a viewer gets no checkboxes
    assert body.count('class="copy"') == 10
    assert "page 1 of 3" in re.sub(r"<[^>]+>", "", body)
    last = viewer_client.get("/queues/default/?state=pending&page=3").content.decode()
    assert last.count('class="copy"') == 5
    # The next to run comes first: the oldest enqueued.
    assert ids[0] in body and ids[-1] in last


def test_page_past_the_end_is_clamped(viewer_client, seed):
    seed.pending()
    body = viewer_client.get("/queues/default/?state=pending&page=999999999999").content.decode()
    assert "page" not in body or 'class="copy"' in body
    assert body.count('class="copy"') == 1


def test_operator_gets_selection_and_state_actions(operator_client, seed):
    seed.archived()
    body = operator_client.get("/queues/default/?state=archived").content.decode()
    assert 'name="task_ids"' in body
    assert 'value="run"' in body and 'value="delete"' in body and 'value="archive"' not in body
    assert 'value="run_all"' in body and 'value="delete_all"' in body


def test_search_by_id_redirects_to_the_task(viewer_client, seed):
    task_id = seed.pending()
    response = viewer_client.get(f"/queues/default/?task_id={task_id}")
    assert response.status_code == 302
    assert response["Location"] == reverse("taskq:task", args=["default", task_id])
    missing = viewer_client.get("/queues/default/?task_id=nope")
    assert missing.status_code == 200
    assert "No task with id" in missing.content.decode()


def test_filter_by_type_and_text_says_how_much_it_searched(viewer_client, seed):
    seed.pending(task_type="email:deliver", payload={"to": "ada@example.com"})
    seed.pending(task_type="email:deliver", payload={"to": "bob@example.com"})
    seed.pending(task_type="image:resize", payload={"to": "ada@example.com"})
    body = viewer_client.get("/queues/default/?state=pending&type=email:&text=ada").content.decode()
    assert "searched 3 of 3" in body
    assert body.count('class="copy"') == 1
    errors = viewer_client.get("/queues/default/?state=archived&text=bounced")
    assert errors.status_code == 200


def test_task_page_shows_every_field_and_history(viewer_client, seed):
    task_id = seed.completed(headers={"trace": "abc-123"})
    response = viewer_client.get(reverse("taskq:task", args=["default", task_id]))
    assert response.status_code == 200
    body = response.content.decode()
    for text in (
        task_id,
        "email:deliver",
        "completed",
        "Retries",
        "retried 0 of 25",
        "Next process time",
        "Timeout",
        "Deadline",
        "Retention",
        "Expires",
        "trace",
        "abc-123",
        "&quot;sent&quot;: true",
        "History",
    ):
        assert text in body, text
    # The history lists the task's own transitions from the event stream.
    assert re.search(r"<td>pending</td>\s*<td>active</td>", body)


@pytest.mark.parametrize(
    ("state", "ran", "shown"),
    # The seed starts the attempt ``ran`` seconds before its ack on the real clock, so a busy machine may add a
    # millisecond or two between the two reads: the milliseconds case allows for it.
    [("completed", 2.5, r"2\.5 s"), ("retry", 0.04, r"4\d ms"), ("archived", 75, r"1m 15s")],
)
def test_finished_tasks_show_how_long_their_last_attempt_ran(viewer_client, seed, state, ran, shown):
    """The hash keeps the run time the worker's ack reported (issue 23), so no table reads the event stream for it;
    an attempt whose start is unknown (a lease that ran out) shows a dash."""
    task_id = getattr(seed, state)(ran=ran)
    unknown = getattr(seed, state)()
    body = viewer_client.get(reverse("taskq:queue", args=["default"]), {"state": state}).content.decode()
    header = re.search(r"<thead>.*?</thead>", body, re.S).group(0)
    assert ">Ran</th>" in header
    rows = {m.group(1): m.group(2) for m in re.finditer(r'<tr data-live-task="([^"]+)">(.*?)</tr>', body, re.S)}
    assert re.search(rf'<td class="num nowrap ran">{shown}</td>', rows[task_id])
    assert '<td class="num nowrap ran">—</td>' in rows[unknown]
    page = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert re.search(rf"<dt>Ran</dt><dd>{shown} ", page)
    assert "<dt>Ran</dt>" not in viewer_client.get(reverse("taskq:task", args=["default", unknown])).content.decode()


def test_active_task_shows_lease_and_orphan_flag(viewer_client, seed):
    task_id, _token = seed.active()
    body = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert "Lease expires" in body and "Orphaned" in body


def test_payload_rendering_and_show_all(viewer_client, seed):
    big = seed.pending(payload={"text": "x" * 10_000})
    body = viewer_client.get(reverse("taskq:task", args=["default", big])).content.decode()
    assert "Truncated" in body and "?full=payload" in body
    full = viewer_client.get(reverse("taskq:task", args=["default", big]) + "?full=payload").content.decode()
    assert "x" * 10_000 in full
    binary = seed.client.enqueue("blob:store", b"\x00\xff<script>", queue="default").id
    body = viewer_client.get(reverse("taskq:task", args=["default", binary])).content.decode()
    assert "binary (hex)" in body and "<script>" not in body and "00 ff 3c" in body


def test_payload_is_escaped(viewer_client, seed):
    task_id = seed.pending(payload="<img src=x onerror=alert(1)>")
    body = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert "<img src=x" not in body and "&lt;img src=x" in body


def test_servers_page_expands_to_running_tasks(viewer_client, seed):
    import time

    seed.server(
        running={
            "t1": {
                "id": "t1",
                "type": "email:deliver",
                "queue": "default",
                "started": int(time.time() * 1000) - 5000,
                "deadline": None,
            }
        }
    )
    body = viewer_client.get("/servers/").content.decode()
    assert "host-1:42" in body and "critical" in body and "(6)" in body
    assert "<details>" in body and "email:deliver" in body and "1 / 8 busy" in body


def test_servers_page_without_workers(viewer_client, engine):
    assert "No worker is running" in viewer_client.get("/servers/").content.decode()


def test_redis_page(viewer_client, engine):
    body = viewer_client.get("/redis/").content.decode()
    for text in (
        "Version",
        "Uptime",
        "Memory used",
        "Memory peak",
        "Fragmentation ratio",
        "Connected clients",
        "AOF enabled",
        "Full INFO",
        "redis_version",
    ):
        assert text in body, text


def test_settings_page_saves_rows_and_theme(viewer, viewer_client):
    from taskq.console.models import ConsolePreference

    page = viewer_client.get("/settings/")
    assert page.status_code == 200 and 'data-theme="system"' in page.content.decode()
    response = viewer_client.post("/settings/", {"rows_per_page": "50", "theme": "dark"})
    assert response.status_code == 302
    preference = ConsolePreference.objects.get(user=viewer)
    assert (preference.rows_per_page, preference.theme) == (50, "dark")
    assert 'data-theme="dark"' in viewer_client.get("/settings/").content.decode()


@pytest.mark.parametrize("data", [{"rows_per_page": "7", "theme": "dark"}, {"rows_per_page": "20", "theme": "x"}, {}])
def test_settings_refuses_bad_values(viewer, viewer_client, data):
    from taskq.console.models import ConsolePreference

    assert viewer_client.post("/settings/", data).status_code == 400
    assert not ConsolePreference.objects.filter(user=viewer).exists()


def test_navigation_and_admin_link(viewer_client, engine, db):
    body = viewer_client.get("/servers/").content.decode()
    for link in ('href="/"', 'href="/servers/"', 'href="/redis/"', 'href="/settings/"', "Log out"):
        assert link in body
    assert 'href="/admin/"' not in body
    staff = logged_in(make_user("stan", "view_console", is_staff=True))
    assert 'href="/admin/"' in staff.get("/servers/").content.decode()


def test_the_queues_url_leads_to_the_queues_table(client, viewer_client, seed):
    seed.pending(queue="emails")
    response = viewer_client.get("/queues/", follow=True)
    assert response.redirect_chain == [("/#queues-table", 302)]  # where the navigation's "Queues" opens
    assert 'id="queues-table"' in response.content.decode() and 'href="/queues/emails/"' in response.content.decode()
    assert client.get("/queues/").url.startswith("/accounts/login/")  # a viewer's page, like the table


def test_static_script_is_served(client):
    response = client.get("/static/taskq/console.js")
    assert response.status_code == 200


def test_filter_results_are_paged(viewer_client, seed):
    for n in range(12):
        seed.pending(task_type="email:deliver", payload={"n": n})
    seed.pending(task_type="image:resize", payload={"n": 99})
    first = viewer_client.get("/queues/default/?state=pending&type=email:&size=10").content.decode()
    assert first.count('class="copy"') == 10 and "12 matches" in first
    assert "page=2" in first and "type=email%3A" in first  # the pager keeps the filter
    second = viewer_client.get("/queues/default/?state=pending&type=email:&size=10&page=2").content.decode()
    assert second.count('class="copy"') == 2 and "page 2 of 2" in second
