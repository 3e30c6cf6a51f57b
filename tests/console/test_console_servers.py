"""One server's page, and the operator's quiet and stop: asked through Redis, audited, refused to viewers, to GET
and in read-only mode; an unknown server is a 404."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queues.engine.worker_store import WorkerStore

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
    assert reverse("server", args=[SERVER]) in viewer_client.get("/servers/").content.decode()
    body = viewer_client.get(reverse("server", args=[SERVER])).content.decode()
    for text in ("host-1:42", "process 1 of a supervisor", "<dd>process</dd>", "<dd>8</dd>", "<dd>40</dd>",
                 "<dd>120</dd>", "<dd>7</dd>", 'href="/queues/critical/"', 'href="/queues/default/tasks/t1/"',
                 'data-live-only="host-1:42:abcd"', "<details open>"):  # fmt: skip
        assert text in body, text
    assert "Quiet" not in body and "Stop" not in body  # a viewer is offered no action


@pytest.mark.parametrize("action", ["quiet", "stop"])
def test_an_operator_quiets_or_stops_a_server(operator_client, server, redis_client, audit, action):
    page = operator_client.get(reverse("server", args=[SERVER])).content.decode()
    url = reverse(f"server-{action}", args=[SERVER])
    assert f'action="{url}"' in page and "data-confirm" in page
    response = operator_client.post(url)
    assert response.status_code == 302 and response.url == reverse("server", args=[SERVER])
    assert redis_client.get(f"tq:control:{SERVER}") == action.encode()
    assert audit == [
        {"user": "otto", "action": f"{action}_server", "queue": "", "task_ids": None, "detail": f"server {SERVER}"}
    ]


def test_quiet_and_stop_are_refused_where_they_must_be(
    viewer_client, operator_client, server, redis_client, audit, settings
):
    url = reverse("server-stop", args=[SERVER])
    assert viewer_client.post(url).status_code == 403
    assert operator_client.get(url).status_code == 405
    assert operator_client.post(reverse("server-stop", args=["nobody:1"])).status_code == 404
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert operator_client.post(url).status_code == 403
    assert not redis_client.exists(f"tq:control:{SERVER}") and audit == []


def test_an_unknown_server_page_is_404(viewer_client, engine):
    response = viewer_client.get(reverse("server", args=["nobody:1"]))
    assert response.status_code == 404 and b"no running server" in response.content
