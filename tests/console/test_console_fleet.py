"""The fleet at a glance (issue 27): the summary bar on every page, read as the queues add up; each server's RSS,
CPU share, tasks done and heartbeat age, marked late in words; Quiet all and Stop all, confirmed with the count,
one audit entry naming the servers, the per-server permission, refused to viewers, to GET and in read-only mode."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse

from taskq.console.views import servers as server_views
from taskq.queues.engine.worker_store import WorkerStore

pytestmark = pytest.mark.django_db


def figures(body: str) -> dict[str, int]:
    """The summary bar's figures as a page shows them."""
    return {name: int(value) for name, value in re.findall(r'data-fleet-figure="(\w+)">(\d+)<', body)}


def write_server(engine, server_id: str, status: str = "active", beat_ago: float = 0.0, **more) -> dict:
    now_ms = int(time.time() * 1000)
    info = {
        "id": server_id, "host": server_id.split(":")[0], "pid": int(server_id.split(":")[1]),
        "started": now_ms - 90_000, "status": status, "queues": {"default": 1}, "strict": False, "concurrency": 4,
        "heartbeat": now_ms - int(beat_ago * 1000), **more,
    }  # fmt: skip
    WorkerStore(engine.broker).write_server(info, {}, ttl=60)
    return info


def test_the_summary_bar_adds_up_every_queue_on_every_page(viewer_client, seed, engine):
    seed.pending(queue="alpha")
    seed.pending(queue="alpha")
    seed.scheduled(queue="beta")
    seed.retry(queue="gamma")
    seed.archived(queue="delta")
    seed.completed(queue="eps")
    seed.active(queue="zeta")
    write_server(engine, "host-a:1:x")
    infos = engine.queue_infos(engine.queues())
    expected = {
        "processed_today": sum(i.processed_today for i in infos),
        "failed_today": sum(i.failed_today for i in infos),
        "active": 1, "pending": 2, "scheduled": 1, "retry": 1, "archived": 1, "servers_up": 1,
    }  # fmt: skip
    assert expected["processed_today"] >= 3 and expected["failed_today"] == 2  # retry and archive count as failed
    for url in ("/", "/servers/", reverse("taskq:queue", args=["alpha"]), reverse("taskq:settings"), "/search/"):
        body = viewer_client.get(url).content.decode()
        assert figures(body) == expected, url
        assert 'aria-label="All queues at a glance"' in body and "<dt>Servers up</dt>" in body


def test_no_bar_for_a_visitor_nor_for_a_fragment(client, viewer_client, seed):
    seed.pending()
    assert "data-fleet-summary" not in client.get(reverse("login")).content.decode()
    fragment = viewer_client.get(reverse("taskq:queue", args=["default"]) + "?fragment=series").content.decode()
    assert "data-fleet-summary" not in fragment


def test_each_server_shows_its_rss_cpu_tasks_done_and_a_heartbeat_that_is_late_in_words(viewer_client, engine):
    write_server(engine, "host-a:1:x", beat_ago=0.5, heartbeat_every=5, rss=3 * 1024 * 1024, cpu=0.25, processed=17)
    write_server(engine, "host-b:2:y", beat_ago=11, heartbeat_every=5)  # past two rounds, not yet three
    body = viewer_client.get("/servers/").content.decode()
    fresh, late = (body.split(f'data-live-server="{s}"')[1].split("</tr>")[0] for s in ("host-a:1:x", "host-b:2:y"))
    assert "data-live-rss>3.0\xa0MB<" in fresh and "data-live-cpu>25.0%<" in fresh
    assert "data-live-processed>17<" in fresh
    assert "data-heartbeat-late" in fresh and re.search(r"data-heartbeat-late[^>]*hidden>late<", fresh)
    assert re.search(r"data-heartbeat-late[^>]*\"\s*>late<", late), late  # shown, and says so in words
    assert re.search(r">1[01] s ago<", late)
    assert "data-live-rss>—<" in late  # a worker from before issue 27 publishes none


def forms(body: str) -> dict[str, tuple[str, list[str]]]:
    """The Quiet all and Stop all forms of a page: action -> (confirmation, server ids sent)."""
    found = {}
    for action in ("quiet", "stop"):
        if f'data-fleet-action="{action}"' not in body:
            continue
        form = body.split(f'data-fleet-action="{action}"')[1].split("</form>")[0]
        confirm = re.search(r'data-confirm="([^"]*)"', form)
        found[action] = (confirm.group(1) if confirm else "", re.findall(r'name="server" value="([^"]+)"', form))
    return found


def test_quiet_all_asks_the_active_servers_listed_with_one_audit_entry(
    operator_client, engine, redis_client, audit, monkeypatch
):
    monkeypatch.setattr(server_views, "ACK_WAIT", 0.2)
    for server_id in ("host-a:1:x", "host-b:2:y"):
        write_server(engine, server_id)
    write_server(engine, "host-c:3:z", status="quiet")
    shown = forms(operator_client.get("/servers/").content.decode())
    assert shown["quiet"] == ("Quiet all 2 active servers? Each fetches no new task and finishes what it runs; they "
                              "stay quiet until they stop.", ["host-a:1:x", "host-b:2:y"])  # fmt: skip
    assert shown["stop"][0].startswith("Stop all 3 servers?") and len(shown["stop"][1]) == 3
    WorkerStore(engine.broker).acknowledge("host-a:1:x", "quiet")  # as a worker does (browser tests: real ones)
    response = operator_client.post(
        reverse("taskq:servers-quiet-all"), {"server": [*shown["quiet"][1], "host-c:3:z"]}, follow=True
    )
    assert response.redirect_chain == [("/servers/", 302)]
    text = response.content.decode()
    assert "2 servers quieted; host-b:2:y did not acknowledge within 0.2 s" in text
    assert redis_client.get("tq:control:host-a:1:x") == b"quiet" == redis_client.get("tq:control:host-b:2:y")
    assert not redis_client.exists("tq:control:host-c:3:z")  # quiet already: nothing to ask
    assert audit == [
        {"user": "otto", "action": "quiet_all_servers", "queue": "", "task_ids": None,
         "detail": "servers host-a:1:x, host-b:2:y"}
    ]  # fmt: skip


def test_stop_all_with_every_server_acknowledging(operator_client, engine, redis_client, audit):
    for server_id in ("host-a:1:x", "host-b:2:y"):
        write_server(engine, server_id)
        WorkerStore(engine.broker).acknowledge(server_id, "stop")
    response = operator_client.post(
        reverse("taskq:servers-stop-all"), {"server": ["host-a:1:x", "host-b:2:y"]}, follow=True
    )
    assert "2 servers asked to stop: host-a:1:x, host-b:2:y." in response.content.decode()
    assert [entry["action"] for entry in audit] == ["stop_all_servers"]
    assert redis_client.get("tq:control:host-b:2:y") == b"stop"


def test_quiet_all_when_the_listed_servers_are_gone_asks_nobody(operator_client, engine, redis_client, audit):
    response = operator_client.post(reverse("taskq:servers-quiet-all"), {"server": ["host-a:1:x"]}, follow=True)
    assert "No listed server is left to quiet" in response.content.decode()
    assert audit == [] and not list(redis_client.scan_iter("tq:control:*"))


def test_quiet_all_and_stop_all_are_refused_where_the_per_server_action_is(
    viewer_client, operator_client, engine, redis_client, audit, settings
):
    write_server(engine, "host-a:1:x")
    assert forms(viewer_client.get("/servers/").content.decode()) == {}  # a viewer is offered neither
    for action in ("quiet", "stop"):
        url = reverse(f"taskq:servers-{action}-all")
        assert viewer_client.post(url, {"server": ["host-a:1:x"]}).status_code == 403
        assert operator_client.get(url).status_code == 405
        assert operator_client.post(url, {"server": ["x" * 400]}).status_code == 400  # no server id
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert forms(operator_client.get("/servers/").content.decode()) == {}
    assert operator_client.post(reverse("taskq:servers-stop-all"), {"server": ["host-a:1:x"]}).status_code == 403
    assert not list(redis_client.scan_iter("tq:control:*")) and audit == []
