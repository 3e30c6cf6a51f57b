"""The console live over a Go asynq deployment: the pages follow a Go server's work by polling, and the console's
operator actions are obeyed by Go servers (pause, run, archive, delete, cancel)."""

from __future__ import annotations

import asyncio
import base64
import sys
import time
from pathlib import Path

import pytest
import redis
from django.urls import reverse

from taskq.console.live import process_hub
from taskq.console.live.polling import PollingHub
from taskq.queues import handles
from taskq.queues.audit import AuditLog
from tests.console.console_support import logged_in, make_user

from . import go_asynq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
from live_support import open_socket, receive_until, run, session_cookie, subscribe

from tests.live.test_live_polling import SAME_ROUND, Monitor, one_round, open_pages, polled

pytestmark = pytest.mark.timeout(240)

WAIT = 60.0  # seconds a Go server gets to do what is expected (a guard, not a timing assertion)


@pytest.fixture
def asynq_settings(settings_redis, r: redis.Redis, go):
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    yield settings_redis
    handles.reset()


def _go_ran(go, r: redis.Redis) -> set[str]:
    return {task_id for _side, task_id, _retried, _name in go.runs(r)}


def test_live_pages_follow_a_go_server(asynq_settings, r: redis.Redis, go, transactional_db) -> None:
    """A dashboard and a queue page see Go's server drain the queue, from polling alone."""
    # Each runs 2.5 s, two at a time: tasks are active for 5 s, which rounds a second apart cannot all miss.
    for n in range(4):
        go.enqueue(
            {"type": "sleep", "payload": base64.b64encode(b"2500").decode(), "queue": "work", "task_id": f"w{n}"}
        )
    cookie = session_cookie(make_user("vera", "view_console"))

    async def body():
        dashboard, _ = await open_socket(cookie)
        queue, _ = await open_socket(cookie)
        first = await subscribe(dashboard, "dashboard")
        assert isinstance(process_hub._hubs[asyncio.get_running_loop()], PollingHub)
        assert first["queues"]["work"]["pending"] == 4
        assert (await subscribe(queue, "queue", queue="work"))["queues"]["work"]["pending"] == 4
        with go.serving("-queues", "work=1", "-name", "g1", "-concurrency", "2"):
            seen: list[dict] = []
            done = lambda ms: any(m.get("queues", {}).get("work", {}).get("processed_today") == 4 for m in ms)  # noqa: E731
            await asyncio.wait_for(receive_until(queue, done, seen), WAIT)
            assert any(m.get("queues", {}).get("work", {}).get("active", 0) > 0 for m in seen)  # seen running
            rows: list[dict] = []
            await asyncio.wait_for(
                receive_until(
                    dashboard,
                    lambda ms: any(
                        r["queue"] == "work" and r["cells"]["processed_today"][0] == "4" for m in ms for r in m["rows"]
                    ),
                    rows,
                    ("dashboard",),
                ),
                WAIT,
            )

    run(body)


def test_a_go_server_obeys_the_consoles_actions(asynq_settings, r: redis.Redis, go, db) -> None:
    """Pause and resume a queue, run an archived task, archive and delete scheduled ones, cancel a running one: each
    through the console's views, and a running Go server does as they say."""
    operator = logged_in(make_user("otto", "view_console", "operate_console"))
    go.enqueue({"type": "skip", "queue": "q", "task_id": "dead"})  # archived by its first run (SkipRetry)
    go.enqueue({"type": "later", "queue": "q", "task_id": "kept", "process_in_seconds": 3600})
    go.enqueue({"type": "later", "queue": "q", "task_id": "binned", "process_in_seconds": 3600})
    go.enqueue({"type": "sleep", "queue": "q", "task_id": "long", "payload": base64.b64encode(b"600000").decode()})

    def act(action: str, *ids: str) -> None:
        response = operator.post(reverse("taskq:task-batch", args=["q"]), {"action": action, "task_ids": list(ids)})
        assert response.status_code == 302, response.content

    with go.serving("-queues", "q=1", "-name", "g1", "-retry-delay", "3600"):
        go_asynq.wait_until(lambda: go("task", "q", "dead")["state"] == "archived", WAIT, 0.5)
        go_asynq.wait_until(lambda: go("task", "q", "long")["state"] == "active", WAIT, 0.5)
        act("cancel", "long")
        go_asynq.wait_until(lambda: go("task", "q", "long")["state"] == "retry", WAIT, 0.5)
        assert "context canceled" in go("task", "q", "long")["last_err"]
        assert operator.post(reverse("taskq:queue-pause", args=["q"])).status_code == 302
        assert next(q for q in go("stats") if q["queue"] == "q")["paused"] is True
        act("run", "dead")
        assert go("task", "q", "dead")["state"] == "pending"
        go.enqueue({"type": "fresh", "queue": "q", "task_id": "fresh"})
        act("archive", "kept")
        act("delete", "binned")
        assert go("task", "q", "kept")["state"] == "archived"
        assert not go("ls", "q", "scheduled")
        time.sleep(3)  # a paused queue: Go's server looks for work every second and must take none
        assert {go("task", "q", t)["state"] for t in ("dead", "fresh")} == {"pending"}
        assert operator.post(reverse("taskq:queue-resume", args=["q"])).status_code == 302
        go_asynq.wait_until(lambda: [t for _s, t, _n, _g in go.runs(r)].count("dead") == 2, WAIT, 0.5)
        go_asynq.wait_until(lambda: "fresh" in _go_ran(go, r), WAIT, 0.5)
        assert not {"kept", "binned"} & _go_ran(go, r)  # archived and deleted: Go never ran them
    audited = set(AuditLog.objects.values_list("action", flat=True))
    assert {"cancel_task", "pause_queue", "run_task", "archive_task", "delete_task", "resume_queue"} <= audited


def test_one_poll_round_a_second_over_asynq_keys(asynq_settings, r: redis.Redis, go, redis_url, transactional_db):
    """The hub ``live_hub()`` builds over asynq's keys polls: a round costs Redis no more for 25 pages of each kind
    than for one, and over 6 s Redis sees at most 8 rounds' worth of commands from the process."""
    for n in range(3):
        go.enqueue({"type": "later", "queue": "mail", "task_id": f"m{n}"})
    go.enqueue({"type": "later", "queue": "low", "task_id": "l1"})
    cookie = session_cookie(make_user("vera", "view_console"))
    monitor = Monitor(redis_url)

    async def body():
        first, _ = await open_socket(cookie)
        await subscribe(first, "summary")  # starts the process's hub, which polls once, then every second
        hub = process_hub._hubs[asyncio.get_running_loop()]
        assert isinstance(hub, PollingHub)
        hub.poll_interval = 3600.0  # after its current wait: the rounds here are driven by hand
        for task in hub._tasks:
            task.cancel()
        hub._tasks = []
        await open_pages(cookie, 1, "mail", "m0")
        one_page_each = await one_round(hub, monitor)
        await open_pages(cookie, 24, "mail", "m0")
        many_pages_each = await one_round(hub, monitor)
        assert 0 < many_pages_each <= one_page_each * SAME_ROUND
        rounds, commands = await polled(hub, monitor, 6.0)
        assert rounds <= 8 and commands <= many_pages_each * 8

    try:
        run(body)
    finally:
        monitor.close()
