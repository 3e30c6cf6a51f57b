"""The server page follows its worker live (issue 23): Quiet and Stop from the page are acknowledged, the header's
badge and buttons follow the state without a reload, and a stopped server's page shows its record.

On daphne (the live console needs a WebSocket server), with a real worker in a thread of this process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from browser_support import Console, open_chromium
from daphne_console import add_user, daphne_console

from taskq.queues import handles
from taskq.queues.engine import Client, Inspector, Registry
from tests.worker.worker_support import FAST, state_of, wait_for
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

OPERATOR = "otto"


@pytest.fixture(scope="module")
def site(chromium, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The console (daphne) and an operator's browser logged in, sharing the test database with the engine."""
    redis.Redis.from_url(redis_url).flushdb()
    workdir = tmp_path_factory.mktemp("server-page")
    with daphne_console(workdir, redis_url) as console_server:
        add_user(console_server.env, OPERATOR, "view_console", "operate_console")
        with open_chromium(chromium, workdir / "profile") as driver:
            console = Console(driver, console_server.url, OPERATOR, workdir)
            console.login("/")
            client, inspector = Client(redis_url), Inspector(redis_url, actor="test")
            try:
                yield {"console": console, "client": client, "inspector": inspector, "redis_url": redis_url}
            finally:
                client.close()
                inspector.close()
                handles.reset()


@pytest.fixture
def worker(site) -> Iterator[Server]:
    """A real worker reading queue ``emails``, stopped at teardown."""
    server = Server(WorkerConfig(redis_url=site["redis_url"], **{**FAST, "queues": {"emails": 1}}), Registry())
    server.start()
    yield server
    server.stop()


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


def test_quiet_then_stop_a_running_worker_from_its_page(site, worker):
    console, client, inspector = site["console"], site["client"], site["inspector"]
    server_id = worker.config.server_id
    console.get("/servers/")
    console.click(f'a[href="/servers/{server_id}/"]')
    console.wait_text(server_id, ".banner")
    live(console)
    console.click("form[action$='/quiet/'] button")
    assert "Quiet worker" in console.confirm()
    console.wait_text("quieted", ".messages")  # acknowledged before the page came back
    assert worker.heartbeat.status == "quiet"
    assert console.find(".banner .badge").text == "quiet"
    assert not console.find("form[action$='/quiet/']").is_displayed()  # quiet already
    held = client.enqueue("echo:held", {"n": 2}, queue="emails", retention=600).id
    assert state_of(inspector, "emails", held) == "pending"  # a quiet worker fetches nothing

    console.click("form[action$='/stop/'] button")
    assert "Stop worker" in console.confirm()
    console.wait_text("is stopping", ".messages")
    assert worker.stop_requested.is_set()
    assert console.find(".banner .badge").text == "stopping"
    assert not console.find("form[action$='/stop/']").is_displayed()
    live(console)
    console.driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    worker.stop()  # what run() does once asked: the page follows without a reload, to the server's record
    console.wait_text("stopped", ".banner .badge")
    console.wait_text("stopped gracefully", ".banner")
    assert console.driver.execute_script("return window.notReloaded") is True
    wait_for(lambda: state_of(inspector, "emails", held) == "pending", what="the held task still pending")


def test_the_server_page_follows_a_quiet_asked_elsewhere(site, worker):
    console, inspector = site["console"], site["inspector"]
    console.get(f"/servers/{worker.config.server_id}/")
    console.wait_text("active", ".banner .badge")
    live(console)
    inspector.control_server(worker.config.server_id, "quiet")  # as `tasks server quiet` does
    console.wait_text("quiet", ".banner .badge")
    console.wait_for(lambda d: not console.find("form[action$='/quiet/']").is_displayed(), "the Quiet button gone")
    assert console.find("form[action$='/stop/']").is_displayed()
