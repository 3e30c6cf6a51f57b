"""Who may scrape /metrics with DEBUG off: loopback, the networks of METRICS_ALLOW, and scrapes that send the
METRICS_TOKEN bearer token; a scrape that sends a wrong token is refused wherever it comes from; `manage.py check`
warns when neither setting is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks

ROOT = Path(__file__).resolve().parents[2]
REMOTE = "203.0.113.7"


def status(client, remote_addr: str, **headers) -> int:
    return client.get("/metrics", REMOTE_ADDR=remote_addr, **headers).status_code


@pytest.fixture
def nothing_set(settings, engine):
    settings.DEBUG = False
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOW = []
    return settings


def test_with_neither_setting_only_loopback_is_answered(client, nothing_set):
    assert status(client, "127.0.0.1") == 200
    assert status(client, "::1") == 200
    response = client.get("/metrics", REMOTE_ADDR=REMOTE)
    assert response.status_code == 403 and b"METRICS_ALLOW" in response.content
    assert status(client, "10.0.0.8") == 403


def test_a_request_relayed_by_a_proxy_is_not_taken_for_loopback(client, nothing_set):
    assert status(client, "127.0.0.1", HTTP_X_FORWARDED_FOR=REMOTE) == 403
    assert status(client, "127.0.0.1", HTTP_FORWARDED=f"for={REMOTE}") == 403


def test_the_networks_of_metrics_allow_are_answered(client, nothing_set):
    nothing_set.METRICS_ALLOW = ["10.0.0.0/8", "fd00::/8", "192.0.2.5"]
    assert status(client, "10.20.30.40") == 200
    assert status(client, "fd00::1") == 200
    assert status(client, "192.0.2.5") == 200
    assert status(client, "192.0.2.6") == 403
    assert status(client, REMOTE) == 403
    assert status(client, "10.20.30.40", HTTP_X_FORWARDED_FOR=REMOTE) == 403
    nothing_set.METRICS_ALLOW = ["10.0.0.0/8", "not-a-network"]  # what `manage.py check` calls taskq.E201
    assert status(client, "10.20.30.40") == 403 and status(client, "127.0.0.1") == 200


def test_the_token_opens_it_from_anywhere_even_through_a_proxy(client, nothing_set):
    nothing_set.METRICS_TOKEN = "s3cret-token"
    assert status(client, REMOTE, HTTP_AUTHORIZATION="Bearer s3cret-token") == 200
    assert status(client, "127.0.0.1", HTTP_X_FORWARDED_FOR=REMOTE, HTTP_AUTHORIZATION="Bearer s3cret-token") == 200
    refused = client.get("/metrics", REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION="Bearer wrong")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert status(client, "127.0.0.1") == 200  # loopback stays open


def test_a_wrong_token_is_refused_from_any_address(client, nothing_set):
    """A scraper that presents a wrong token is misconfigured: it hears 401 even from loopback or an allowed
    network, where a scrape without a token is answered (issue 26)."""
    nothing_set.METRICS_TOKEN = "s3cret-token"
    nothing_set.METRICS_ALLOW = ["10.0.0.0/8"]
    for address in ("127.0.0.1", "::1", "10.20.30.40", REMOTE):
        refused = client.get("/metrics", REMOTE_ADDR=address, HTTP_AUTHORIZATION="Bearer wrong")
        assert refused.status_code == 401, address
        assert refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert status(client, address, HTTP_AUTHORIZATION="Bearer s3cret-token") == 200, address
    # An empty bearer token (Prometheus reading an empty credentials file) is a wrong one too.
    assert status(client, "127.0.0.1", HTTP_AUTHORIZATION="Bearer ") == 401
    assert status(client, "127.0.0.1", HTTP_AUTHORIZATION="bearer s3cret-token") == 200  # the scheme is any case
    # No token: today's rules, by address.
    assert status(client, "127.0.0.1") == 200
    assert status(client, "10.20.30.40") == 200
    assert status(client, REMOTE) == 401
    # Another scheme presents no bearer token: judged by its address like a scrape without one.
    assert status(client, "127.0.0.1", HTTP_AUTHORIZATION="Basic s3cret-token") == 200


def test_a_wrong_token_is_refused_with_debug_on_too(client, nothing_set):
    nothing_set.DEBUG = True
    nothing_set.METRICS_TOKEN = "s3cret-token"
    assert status(client, REMOTE, HTTP_AUTHORIZATION="Bearer wrong") == 401
    assert status(client, REMOTE, HTTP_AUTHORIZATION="Bearer s3cret-token") == 200
    assert status(client, REMOTE) == 200


def test_without_metrics_token_a_presented_token_changes_nothing(client, nothing_set):
    """With no METRICS_TOKEN there is no right token to be wrong against: the address decides, as without one."""
    assert status(client, "127.0.0.1", HTTP_AUTHORIZATION="Bearer anything") == 200
    assert status(client, REMOTE, HTTP_AUTHORIZATION="Bearer anything") == 403


def test_debug_leaves_it_open(client, nothing_set):
    nothing_set.DEBUG = True
    assert status(client, REMOTE) == 200


def metrics_checks() -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(tags=[checks.Tags.security]) if m.id in ("taskq.W201", "taskq.E201")]


def test_the_system_check_warns_when_neither_setting_is_set(nothing_set):
    assert [m.id for m in metrics_checks()] == ["taskq.W201"]
    nothing_set.METRICS_TOKEN = "s3cret-token"
    assert metrics_checks() == []
    nothing_set.METRICS_TOKEN = ""
    nothing_set.METRICS_ALLOW = ["10.0.0.0/8"]
    assert metrics_checks() == []
    nothing_set.METRICS_ALLOW = ["10.0.0.0/33"]
    [error] = metrics_checks()
    assert error.id == "taskq.E201" and "10.0.0.0/33" in error.msg
    nothing_set.METRICS_ALLOW = []
    nothing_set.DEBUG = True
    assert metrics_checks() == []


def manage_py_check(**env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("METRICS_TOKEN", "METRICS_ALLOW", "DEBUG")}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manage_py_check_warns_and_a_bad_network_in_the_environment_fails_at_start():
    warned = manage_py_check()
    assert warned.returncode == 0 and "taskq.W201" in warned.stdout + warned.stderr
    allowed = manage_py_check(METRICS_ALLOW="10.0.0.0/8")
    assert allowed.returncode == 0 and "taskq.W201" not in allowed.stdout + allowed.stderr
    bad = manage_py_check(METRICS_ALLOW="10.0.0.0/8,not-a-network")
    assert bad.returncode != 0 and 'METRICS_ALLOW: "not-a-network" is not a network' in bad.stderr
