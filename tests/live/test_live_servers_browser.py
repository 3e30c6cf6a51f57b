"""The servers pages follow the fleet live and settle on what a fresh load shows: after Stop all, the stopped
workers leave the running list for the ended one and the workers started since are listed with Quiet all and
Stop all naming them; an open server's page, once its server has stopped, shows the server's record. And the
heartbeat ages tick from the clock correction taken at load. In headless Chromium against the console under a
real daphne, with real workers in threads of this process.

Nothing here asserts a duration: each test waits, generously, for the page to agree with a fresh load.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from browser_support import Console, open_chromium
from daphne_console import add_user, daphne_console

from taskq.queues import handles
from taskq.queues.engine import Inspector, Registry
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.worker_store import WorkerStore
from tests.worker.worker_support import FAST, wait_for
from taskq.worker.config import WorkerConfig
from taskq.worker.server import Server

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

OPERATOR = "otto"
SETTLE = 60.0  # a guard: the hub reads the registry again within 5 s of a change

# What the servers page shows, read the same way from the live page and a fresh load.
READ_SERVERS = """
var text = function (el) { return el.textContent.replace(/\\s+/g, " ").trim(); };
var visible = function (css) {
  return Array.prototype.filter.call(document.querySelectorAll(css), function (el) { return !el.closest("[hidden]"); });
};
var ids = function (css, attr) {
  return Array.prototype.map.call(document.querySelectorAll(css), function (el) { return el.getAttribute(attr); });
};
return {
  running: ids("tr[data-live-server]:not(.live-left)", "data-live-server"),
  actions: visible("form[data-fleet-action] button").map(text),
  ended: ids("tr[data-ended-server]", "data-ended-server"),
  empty: visible("[data-live-empty]").map(text)
};
"""
# One server's page: its header (a badge, the note of a record) and its figures, but for the ages that tick.
READ_SERVER = """
var text = function (el) { return el.textContent.replace(/\\s+/g, " ").trim(); };
return {
  title: text(document.querySelector(".banner h1")),
  badge: text(document.querySelector(".banner .badge")),
  note: Array.prototype.map.call(document.querySelectorAll(".banner p.note"), text),
  figures: Array.prototype.map.call(document.querySelectorAll(".banner dl.figures dt"), text),
  indicator: text(document.querySelector("[data-live-status]"))
};
"""


@pytest.fixture(scope="module")
def site(chromium, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    redis.Redis.from_url(redis_url).flushdb()
    workdir = tmp_path_factory.mktemp("servers-live")
    with daphne_console(workdir, redis_url) as console_server:
        add_user(console_server.env, OPERATOR, "view_console", "operate_console")
        with open_chromium(chromium, workdir / "profile") as driver:
            console = Console(driver, console_server.url, OPERATOR, workdir)
            console.login("/")
            try:
                yield {"console": console, "redis_url": redis_url}
            finally:
                handles.reset()


@pytest.fixture
def workers(site) -> Iterator[list[Server]]:
    """Start real workers (``start(workers, site)``); every one still running is stopped at teardown."""
    redis.Redis.from_url(site["redis_url"]).flushdb()
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def start(workers: list[Server], site: dict[str, Any]) -> Server:
    """A real worker, once its first heartbeat has registered it (its page is a 404 before)."""
    server = Server(WorkerConfig(redis_url=site["redis_url"], **{**FAST, "queues": {"emails": 1}}), Registry())
    server.start()
    workers.append(server)
    with Inspector(site["redis_url"]) as inspector:
        wait_for(lambda: server.config.server_id in {s.id for s in inspector.servers()}, what="the server registered")
    return server


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


def agrees(console: Console, path: str, script: str) -> dict[str, Any]:
    """Wait for the open page to read as a fresh load of ``path``; return what both show."""
    diffs: dict[str, Any] = {"never read": True}
    shown: dict[str, Any] = {}
    deadline = time.monotonic() + SETTLE
    while diffs and time.monotonic() < deadline:
        shown = console.driver.execute_script(script)
        fresh = console.read_fresh(path, script)
        diffs = {key: {"live": shown[key], "fresh": fresh[key]} for key in fresh if shown[key] != fresh[key]}
    assert not diffs, f"{path}: the live page differs from a fresh load: {diffs}"
    assert console.driver.execute_script("return window.notReloaded") is True
    return shown


def test_after_stop_all_the_servers_page_lists_what_a_fresh_load_lists(site, workers):
    console = site["console"]
    first = [start(workers, site) for _ in range(2)]
    console.get("/servers/")
    console.wait_for(lambda d: len(console.find_all("tr[data-live-server]")) == 2, "both servers listed")
    console.click("form[data-fleet-action='stop'] button")
    assert console.confirm().startswith("Stop all 2 servers?")
    console.wait_text("2 servers asked to stop", ".messages")
    live(console)
    console.driver.execute_script("window.notReloaded = true")  # gone if the page reloads
    for server in first:
        assert server.stop_requested.is_set()
        server.stop()  # what run() does once asked
    second = [start(workers, site) for _ in range(2)]

    shown = agrees(console, "/servers/", READ_SERVERS)
    assert sorted(shown["running"]) == sorted(s.config.server_id for s in second)
    assert shown["actions"] == ["Quiet all (2)", "Stop all (2)"]
    assert sorted(shown["ended"]) == sorted(s.config.server_id for s in first)


def test_a_stopped_servers_page_shows_its_record_without_a_reload(site, workers):
    console = site["console"]
    server = start(workers, site)
    path = f"/servers/{server.config.server_id}/"
    console.get(path)
    live(console)
    console.driver.execute_script("window.notReloaded = true")
    assert console.find(".banner .badge").text == "active"
    server.stop()
    workers.remove(server)
    shown = agrees(console, path, READ_SERVER)
    assert shown["badge"] == "stopped" and "stopped gracefully" in shown["note"][0]
    assert "Last heartbeat" in shown["figures"] and shown["indicator"] == "○ not live"  # a record does not update


# The browser's clock moves on by a minute and a half right after the page has loaded, before the ages first
# tick: those 90 s passed for the heartbeats too. (Taken at the first tick, the clock correction swallowed them.)
SKIP_AHEAD = """
(function () {
  var realNow = Date.now.bind(Date), ahead = 0;
  Date.now = function () { return realNow() + ahead; };
  document.addEventListener("DOMContentLoaded", function () { ahead = 90000; });
}());
"""


def test_heartbeat_ages_count_from_the_clock_correction_taken_at_load(site, workers):
    """A server whose heartbeats stopped (its process hangs): the page renders its age, then its ages tick on the
    page's clock corrected at load, and it is marked late once past two intervals."""
    console, driver = site["console"], site["console"].driver
    store = WorkerStore(Broker(site["redis_url"]))
    server_id = "hung-host:4242:feedbeef"
    store.write_server(
        {"id": server_id, "host": "hung-host", "pid": 4242, "concurrency": 1, "queues": {"emails": 1},
         "status": "active", "started": int(time.time() * 1000), "heartbeat": int(time.time() * 1000),
         "heartbeat_every": 30.0},
        {}, ttl=600,
    )  # fmt: skip
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SKIP_AHEAD})
    try:
        console.get("/servers/")
        rendered = int(console.find(f'tr[data-live-server="{server_id}"] [data-heartbeat-age]').text.split()[0])
        assert console.find(f'tr[data-live-server="{server_id}"] [data-heartbeat-late]').get_attribute("hidden")

        def ticked(_d: Any) -> int | None:
            shown = int(console.find(f'tr[data-live-server="{server_id}"] [data-heartbeat-age]').text.split()[0])
            return shown if shown != rendered else None

        shown = console.wait_for(ticked, "the age to tick")
        assert shown >= rendered + 90, f"the age reads {shown} s, {rendered} s at rendering plus the 90 s passed"
        late = console.find(f'tr[data-live-server="{server_id}"] [data-heartbeat-late]')
        assert late.get_attribute("hidden") is None  # two 30 s intervals have passed
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        store.broker.close()
