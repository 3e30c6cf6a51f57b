"""One server's page, and the operator's quiet and stop: asked through Redis, acknowledged, audited, refused to
viewers, to GET and in read-only mode; the header's badge and actions follow the state; a server that ended shows
its record, on its page and on the list; an unknown server is a 404, a malformed id a 400."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from taskq.console.views import servers as server_views
from taskq.queues.engine.worker_store import WorkerStore

pytestmark = pytest.mark.django_db

SERVER = "host-1:42:abcd"


@pytest.fixture
def server(engine):
    info = {
        "id": SERVER, "host": "host-1", "pid": 42, "started": 1_700_000_000_000, "status": "active",
        "queues": {"default": 3, "critical": 6}, "strict": False, "concurrency": 8, "pool": "process",
        "prefetch": 40, "processed": 120, "failed": 7, "process_index": 1,
        "heartbeat": 1_700_000_000_000,
    }  # fmt: skip
    running = {"t1": {"id": "t1", "type": "email:deliver", "queue": "default", "started": 1_700_000_000_000}}
    WorkerStore(engine.broker).write_server(info, running, ttl=60)
    return info


def test_the_server_page_shows_everything_and_links_from_the_list(viewer_client, server):
    assert reverse("taskq:server", args=[SERVER]) in viewer_client.get("/servers/").content.decode()
    body = viewer_client.get(reverse("taskq:server", args=[SERVER])).content.decode()
    for text in ("host-1:42", "process 1 of a supervisor", "<dd>process</dd>", "<dd>8</dd>", "<dd>40</dd>",
                 "<dd>120</dd>", "<dd>7</dd>", 'href="/queues/critical/"', 'href="/queues/default/tasks/t1/"',
                 'data-live-only="host-1:42:abcd"', "<details open>"):  # fmt: skip
        assert text in body, text
    assert "Quiet" not in body and "Stop" not in body  # a viewer is offered no action


@pytest.mark.parametrize("action", ["quiet", "stop"])
def test_an_operator_quiets_or_stops_a_server(operator_client, server, engine, redis_client, audit, action):
    page = operator_client.get(reverse("taskq:server", args=[SERVER])).content.decode()
    url = reverse(f"taskq:server-{action}", args=[SERVER])
    assert f'action="{url}"' in page and "data-confirm" in page
    WorkerStore(engine.broker).acknowledge(SERVER, action)  # as the worker does (tests/worker: a real one)
    response = operator_client.post(url, follow=True)
    assert response.redirect_chain == [(reverse("taskq:server", args=[SERVER]), 302)]
    assert f"Server {SERVER} {server_views.CONTROLS[action]}" in response.content.decode()
    assert redis_client.get(f"tq:control:{SERVER}") == action.encode()
    assert audit == [
        {"user": "otto", "action": f"{action}_server", "queue": "", "task_ids": None, "detail": f"server {SERVER}"}
    ]


def test_without_an_acknowledgement_the_operator_is_told_so(operator_client, server, redis_client, monkeypatch):
    monkeypatch.setattr(server_views, "ACK_WAIT", 0.05)
    response = operator_client.post(reverse("taskq:server-quiet", args=[SERVER]), follow=True)
    assert "has not acknowledged within 0.05 s" in response.content.decode()
    assert redis_client.get(f"tq:control:{SERVER}") == b"quiet"  # asked all the same: its heartbeat reads it


@pytest.mark.parametrize(("status", "quiet", "stop"), [("active", True, True), ("quiet", False, True),
                                                      ("stopping", False, False)])  # fmt: skip
def test_the_header_badge_and_actions_follow_the_state(operator_client, server, engine, status, quiet, stop):
    WorkerStore(engine.broker).write_server({**server, "status": status}, {}, ttl=60)
    body = operator_client.get(reverse("taskq:server", args=[SERVER])).content.decode()
    assert f"data-live-server-badge>{status}</span>" in body
    for action, offered in (("quiet", quiet), ("stop", stop)):
        form = body.split(f'data-live-server-action="{action}"')[1].split(">")[0]
        assert ("hidden" not in form) == offered, (action, form)


def test_quiet_and_stop_are_refused_where_they_must_be(
    viewer_client, operator_client, server, redis_client, audit, settings
):
    url = reverse("taskq:server-stop", args=[SERVER])
    assert viewer_client.post(url).status_code == 403
    assert operator_client.get(url).status_code == 405
    assert operator_client.post(reverse("taskq:server-stop", args=["nobody:1"])).status_code == 404
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert operator_client.post(url).status_code == 403
    assert not redis_client.exists(f"tq:control:{SERVER}") and audit == []


def test_an_unknown_server_page_is_404_and_a_malformed_id_400(viewer_client, operator_client, engine, audit):
    response = viewer_client.get(reverse("taskq:server", args=["nobody:1"]))
    assert response.status_code == 404 and b"is running or ended in the last hour" in response.content
    too_long = "x" * 400
    response = viewer_client.get(reverse("taskq:server", args=[too_long]))
    assert response.status_code == 400 and b"server id is 400 characters long" in response.content
    assert operator_client.post(reverse("taskq:server-stop", args=[too_long])).status_code == 400
    assert audit == []


def ended_record(engine, how: str, ago: float = 60) -> None:
    """The record a server leaves: at a graceful exit (written by the worker) or once found lost (the recoverer),
    ``ago`` seconds ago (older than ``keep`` would be trimmed from the list as it is written)."""
    ended = int((time.time() - ago) * 1000)
    server = {"id": SERVER, "host": "host-1", "pid": 42, "started": ended - 60_000, "status": "stopped",
              "how": how, "reason": "stopped by an operator", "ended": ended, "queues": {"default": 3},
              "processed": 12, "failed": 1}  # fmt: skip
    tasks = [
        {"queue": "default", "id": "t1", "type": "email:deliver", "outcome": "requeued", "at": ended},
        {"queue": "default", "id": "t2", "type": "email:deliver", "outcome": "finished", "at": ended - 1000},
        {"queue": "default", "id": "t3", "type": "report:build", "outcome": "unstarted", "at": ended},
    ]
    WorkerStore(engine.broker).clear_server(SERVER, {"server": server, "tasks": tasks}, keep=3600)


def test_a_stopped_server_shows_its_record_on_its_page_and_on_the_list(viewer_client, engine):
    ended_record(engine, "graceful")
    response = viewer_client.get(reverse("taskq:server", args=[SERVER]))
    assert response.status_code == 200
    body = response.content.decode()
    for text in ('data-server-ended="graceful"', "stopped gracefully", "stopped by an operator", "<dd>12</dd>",
                 'data-held-task="t1" data-outcome="requeued"', "requeued: back at the head of pending",
                 'data-held-task="t2" data-outcome="finished"', "requeued before it started",
                 'href="/queues/default/tasks/t3/"'):  # fmt: skip
        assert text in body, text
    assert body.index('data-held-task="t2"') < body.index('data-held-task="t1"')  # in the order they ended
    assert "Quiet" not in body and "Stop</button>" not in body
    listing = viewer_client.get("/servers/").content.decode()
    assert "Ended in the last hour" in listing and f'data-ended-server="{SERVER}"' in listing
    assert reverse("taskq:server", args=[SERVER]) in listing and "No worker is running" in listing


@pytest.mark.parametrize(("ago", "says"), [(5, "(just now)"), (6 * 60 + 5, "(6\xa0minutes ago)")])
def test_a_servers_end_reads_how_long_ago_in_words(viewer_client, engine, ago, says):
    ended_record(engine, "graceful", ago)
    for url in (reverse("taskq:server", args=[SERVER]), reverse("taskq:servers")):
        body = viewer_client.get(url).content.decode()
        assert says in body and "(0\xa0minutes" not in body, url  # it read "(0 minutes ago)" for its first minute


def test_a_lost_server_says_so(viewer_client, engine):
    ended_record(engine, "lost")
    body = viewer_client.get(reverse("taskq:server", args=[SERVER])).content.decode()
    assert 'data-server-ended="lost"' in body and "heartbeat ran out without a graceful exit" in body
