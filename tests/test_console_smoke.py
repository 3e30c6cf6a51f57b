"""The console answers: login wall, admin, static files through the real ASGI app, health and dashboard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model

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
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [(b"host", b"localhost")],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
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
    from console.asgi import application

    status, headers, body = asgi_get(application, "/static/console/console.css")
    assert status == 200
    assert headers[b"content-type"].startswith(b"text/css")
    assert b"taskq console" in body


def test_static_css_served_by_test_client(client):
    response = client.get("/static/console/console.css")
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


def test_healthz_503_when_redis_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:18609/6"  # a port of this suite where nothing listens
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


def fake_queue_info(name: str, **overrides):
    fields = dict(
        queue=name,
        pending=3,
        active=1,
        scheduled=2,
        retry=1,
        archived=4,
        completed=5,
        aggregating=0,
        size=16,
        paused=False,
        latency=1.25,
        memory_bytes=2048,
        processed_today=10,
        failed_today=2,
    )
    fields.update(overrides)
    return SimpleNamespace(**fields)


def test_dashboard_lists_queues(admin_client_logged_in, monkeypatch):
    infos = {"critical": fake_queue_info("critical", paused=True), "default": fake_queue_info("default")}
    inspector = SimpleNamespace(
        queues=lambda: list(infos), queue_infos=lambda names: [infos[n] for n in names], history=lambda name, days: []
    )
    monkeypatch.setattr("queues.conf.get_inspector", lambda: inspector)
    response = admin_client_logged_in.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "critical" in body and "default" in body
    assert "paused" in body
    assert "1.2 s" in body or "1.3 s" in body


def test_dashboard_503_when_redis_is_down(admin_client_logged_in, monkeypatch):
    from queues.engine import RedisUnavailableError

    def unavailable():
        raise RedisUnavailableError("connection refused")

    monkeypatch.setattr("queues.conf.get_inspector", lambda: SimpleNamespace(queues=unavailable))
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
