"""The console answers: login wall, admin, static files through the real ASGI app, health and dashboard."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model

from taskq.queues.engine import Client, FakeClock
from tests.asgi_http import http_scope

pytestmark = pytest.mark.django_db


def test_anonymous_dashboard_redirects_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_login_page_renders(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content


def test_admin_login_page(client):
    assert client.get("/admin/login/").status_code == 200


def asgi_get(application, path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    """GET ``path`` through an ASGI app and collect the whole response.

    Not channels' HttpCommunicator: it assumes every body message carries "body", which the ASGI spec makes
    optional (Django ends a streamed response with a bare {"type": "http.response.body"}).
    """

    async def run():
        scope = http_scope("GET", path, [(b"host", b"localhost")])
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await communicator.receive_output(timeout=10)
        assert start["type"] == "http.response.start"
        body = b""
        while True:
            message = await communicator.receive_output(timeout=10)
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await communicator.wait(timeout=10)
        return start["status"], {k.lower(): v for k, v in start.get("headers", [])}, body

    return async_to_sync(run)()


def test_static_css_served_through_asgi_app_without_collectstatic():
    from taskq.console.asgi import application

    status, headers, body = asgi_get(application, "/static/taskq/console.css")
    assert status == 200
    assert headers[b"content-type"].startswith(b"text/css")
    assert b"taskq console" in body


def test_static_css_served_by_test_client(client):
    response = client.get("/static/taskq/console.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"/* taskq console")


def test_healthz_reports_console_redis_and_database(client, settings_redis, redis_client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {
        "status": "ok",
        "checks": {"console": "ok", "redis": "ok", "database": "ok"},
    }


def test_healthz_503_when_redis_is_down(client, redis_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert json.loads(response.content) == {
        "status": "unavailable",
        "checks": {"console": "ok", "redis": "fail", "database": "ok"},
    }


def test_healthz_503_names_each_part_that_is_down(tmp_path):
    # A console process whose database file cannot be opened and whose Redis does not answer: both named, no 500.
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/missing-dir/db.sqlite3",
        "REDIS_URL": "redis://127.0.0.1:18609/6",
        "ALLOWED_HOSTS": "testserver",
    }
    probe = (
        "import django, json; django.setup(); from django.test import Client; r = Client().get('/healthz'); "
        "print(r.status_code, r.content.decode())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    status, _, body = done.stdout.strip().splitlines()[-1].partition(" ")
    assert status == "503", done.stderr[-2000:]
    assert json.loads(body) == {
        "status": "unavailable",
        "checks": {"console": "ok", "redis": "fail", "database": "fail"},
    }


@pytest.fixture
def admin_client_logged_in(client):
    user = get_user_model().objects.create_superuser("admin", email="", password="pw-for-tests-only")
    client.force_login(user)
    return client


def test_dashboard_lists_queues(admin_client_logged_in, engine, redis_url):
    # Tasks that have waited 1.25 s, enqueued on a clock set that far back, so that nothing waits for real time;
    # the page shows a latency of 1.something s however long the test takes to render it (under 0.75 s).
    with Client(redis_url, clock=FakeClock(time.time() - 1.25)) as producer:
        producer.enqueue("email", queue="critical")
        producer.enqueue("email", queue="default")
    engine.pause_queue("critical")
    response = admin_client_logged_in.get("/")
    assert response.status_code == 200
    rows = dict(re.findall(r'<tr data-live-for="(\w+)">(.*?)</tr>', response.content.decode(), re.S))
    assert "badge paused" in rows["critical"] and "badge running" in rows["default"]
    for row in rows.values():
        assert re.search(r'data-live-cell="latency">1\.\d s<', row), row


def test_dashboard_503_when_redis_is_down(admin_client_logged_in, redis_down):
    response = admin_client_logged_in.get("/")
    assert response.status_code == 503
    assert b"Redis is unavailable" in response.content


def test_dashboard_with_real_engine(admin_client_logged_in, settings_redis, redis_client):
    response = admin_client_logged_in.get("/")
    assert response.status_code == 200
    assert b"<h1>Dashboard</h1>" in response.content


def test_bootstrap_admin_creates_then_resets(monkeypatch, capsys):
    from django.core.management import call_command

    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    call_command("bootstrap_admin")
    first = capsys.readouterr().out
    password = first.strip().splitlines()[-1].removeprefix("admin password: ")
    assert get_user_model().objects.get(username="admin").check_password(password)

    call_command("bootstrap_admin")
    assert "already exists" in capsys.readouterr().out

    monkeypatch.setenv("ADMIN_PASSWORD", "chosen-by-operator")
    call_command("bootstrap_admin", "--reset")
    assert "admin password: chosen-by-operator" in capsys.readouterr().out
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password("chosen-by-operator")


def test_the_standalone_consoles_404_is_its_own_page(admin_client):
    page = admin_client.get("/no/such/page/")
    assert page.status_code == 404
    assert b"There is no such page, queue or task" in page.content
    assert b'class="brand" href="/"' in page.content
