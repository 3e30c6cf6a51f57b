"""Fixtures of the live-console tests: the engine on the flushed test database, users, a transition driver."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from daphne_console import daphne_console
from live_support import Driver, make_user, session_cookie

from taskq.queues import handles

# The browser and its driver are tests/browser's fixtures (Debian's Chromium through Selenium); the live tests
# reuse them rather than set up a second browser. Their conftest imports its helpers by bare name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from tests.browser.conftest import chromium, driver  # noqa: F401


@pytest.fixture
def live_engine(settings_redis, redis_client):
    handles.reset()
    yield redis_client
    handles.reset()


@pytest.fixture
def moves(live_engine, redis_url):
    d = Driver(redis_url)
    yield d
    d.close()


@pytest.fixture
def viewer_cookie(transactional_db) -> str:
    return session_cookie(make_user("vera", "view_console"))


@pytest.fixture
def nobody_cookie(transactional_db) -> str:
    return session_cookie(make_user("nina"))


@pytest.fixture
def admin_cookie(transactional_db) -> str:
    return session_cookie(make_user("ada", is_superuser=True, is_staff=True))


@pytest.fixture
def daphne(tmp_path, live_engine, redis_url):
    """The console under a real daphne on a port the OS picks (``daphne_console.DaphneConsole``)."""
    with daphne_console(tmp_path, redis_url) as console:
        yield console


@pytest.fixture
def asgi_console(daphne) -> str:
    """The base URL of the daphne console, for the browser tests."""
    return daphne.url
