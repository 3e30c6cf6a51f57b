"""Fixtures of the browser tests: Debian's Chromium driven by Selenium against the console served for real.

The console runs in pytest-django's ``live_server`` (a real HTTP server in a thread of this process, on the
transactional test database), the engine is pointed at the flushed test Redis, and a real worker
(``taskq.worker.server.Server``, own ``Registry``, short intervals) runs the tasks when a test asks for one.

The browser is ``/usr/bin/chromium`` through ``/usr/bin/chromedriver``, both given explicitly so Selenium
Manager never runs and nothing is downloaded (``scripts/ensure-chromium.sh`` installs them; ``make test``
calls it). A missing browser fails these tests; only ``TASKQ_SKIP_BROWSER=1`` turns that into a skip.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import CHROMEDRIVER, CHROMIUM, Console, open_chromium

from taskq.queues.engine import Registry, handler
from tests.console.console_support import make_user
from tests.worker.worker_support import FAST
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

# Selenium Manager must never run (it would download a browser or driver). Explicit paths already keep it out;
# these make sure that, were it reached anyway, it stays offline and sends nothing.
os.environ.setdefault("SE_OFFLINE", "true")
os.environ.setdefault("SE_AVOID_STATS", "true")

#: Where screenshots are written. The committed set in docs/screenshots/ is refreshed by pointing this there.
SCREENSHOT_DIR = Path(os.environ.get("TASKQ_SCREENSHOT_DIR", "build/screenshots"))


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """The browser and driver paths; fails (never silently skips) when they are missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        message = (
            f"missing {', '.join(missing)}: install Debian's chromium and chromium-driver "
            "(bash scripts/ensure-chromium.sh, which `make test` runs)"
        )
        if os.environ.get("TASKQ_SKIP_BROWSER") == "1":
            pytest.skip(f"TASKQ_SKIP_BROWSER=1 and {message}")
        pytest.fail(message)
    return CHROMIUM, CHROMEDRIVER


@pytest.fixture
def driver(chromium: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A fresh headless Chromium (own profile directory) per test."""
    with open_chromium(chromium, tmp_path_factory.mktemp("chromium-profile")) as browser:
        yield browser


@pytest.fixture
def operator(transactional_db):
    return make_user("otto", "view_console", "operate_console")


@pytest.fixture
def console(driver, live_server, engine, operator) -> Console:
    """The browser, the live console's URL and the operator's name: ``console.login()`` to begin."""
    return Console(driver, live_server.url, operator.get_username(), SCREENSHOT_DIR)


@pytest.fixture
def registry() -> Registry:
    """Handlers of the test worker: ``echo:*`` succeeds with its payload as result; ``hold:*`` runs until the
    test ends (so a server shows a running task)."""
    registry = Registry()
    release = threading.Event()

    @handler("echo", registry=registry)
    def echo(task):
        task.write_result({"echoed": task.json()})

    @handler("hold", registry=registry)
    def hold(task):
        while not release.wait(0.05) and not task.cancelled:
            pass

    registry.release = release  # type: ignore[attr-defined]
    return registry


@pytest.fixture
def start_worker(engine, redis_url: str, registry: Registry) -> Iterator[Callable[..., Server]]:
    """``start_worker(queues={...})`` starts a real worker on the test database; stopped at teardown."""
    started: list[Server] = []

    def start(**overrides: Any) -> Server:
        server = Server(WorkerConfig(redis_url=redis_url, **{**FAST, **overrides}), registry)
        server.start()
        started.append(server)
        return server

    yield start
    registry.release.set()  # type: ignore[attr-defined]
    for server in reversed(started):
        server.stop()
