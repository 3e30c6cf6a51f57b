"""The fleet at a glance in a real browser on daphne (issue 27): the summary bar follows a mixed workload live and
then reads as a fresh load does, on a live page and on a page live for its bar only; Quiet all quiets two real
worker processes, confirmed with their count, and the page follows without a reload."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from browser_support import Console, open_chromium
from daphne_console import add_user, daphne_console

from taskq.queues import handles
from taskq.queues.engine import Client, Inspector
from tests.cli.helpers import Seed
from tests.ports import free_port, given_ports
from tests.worker.worker_support import kill_process, start_taskworker, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

OPERATOR = "otto"
BAR = "return Object.fromEntries([...document.querySelectorAll('[data-fleet-figure]')].map(e => [e.dataset.fleetFigure, Number(e.textContent)]))"  # noqa: E501


@pytest.fixture(scope="module")
def site(chromium, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    redis.Redis.from_url(redis_url).flushdb()
    workdir = tmp_path_factory.mktemp("fleet")
    with daphne_console(workdir, redis_url, port=free_port(given_ports())) as console_server:
        add_user(console_server.env, OPERATOR, "view_console", "operate_console")
        with open_chromium(chromium, workdir / "profile") as driver:
            console = Console(driver, console_server.url, OPERATOR, workdir)
            console.login("/")
            inspector = Inspector(redis_url)
            try:
                yield {"console": console, "inspector": inspector, "redis_url": redis_url, "workdir": workdir}
            finally:
                inspector.close()
                handles.reset()


@pytest.fixture
def workers(site) -> Iterator[list[Any]]:
    procs: list[Any] = []
    yield procs
    for proc in procs:
        kill_process(proc)


def start_worker(site: dict[str, Any], procs: list[Any], name: str) -> Any:
    return start_taskworker(
        procs, site["redis_url"], Path(site["workdir"]) / f"{name}.log",
        "--queues", "work", "--concurrency", "2", "--import", "tests.worker.crash_tasks",
    )  # fmt: skip


def fresh(inspector: Inspector) -> dict[str, int]:
    summary = inspector.fleet_summary(inspector.queues())
    return {name: getattr(summary, name) for name in vars(summary)}


def live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the page to be live")


@pytest.mark.parametrize("page", ["/", "/settings/"])  # a live page, and one live for its bar only
def test_the_summary_bar_follows_a_mixed_workload_and_matches_a_fresh_load(site, workers, page):
    console, inspector = site["console"], site["inspector"]
    redis.Redis.from_url(site["redis_url"]).flushdb()
    console.get(page)
    live(console)
    assert console.driver.execute_script(BAR) == fresh(inspector)
    start_worker(site, workers, "summary")
    seed = Seed(site["redis_url"])
    try:
        with Client(site["redis_url"]) as client:
            client.enqueue_many([("test:record", {"sleep": 0.05})] * 6, queue="work")
            for _ in range(2):
                seed.retry(queue="mails")
            seed.archived(queue="mails")
            seed.scheduled(queue="later")
            seed.pending(queue="idle")
            seed.completed(queue="done")
    finally:
        seed.close()
    wait_for(lambda: fresh(inspector)["processed_today"] == 6 + 3 + 1 and fresh(inspector)["servers_up"] == 1,
             timeout=30, what="the workload done and the worker up")  # fmt: skip
    expected = fresh(inspector)
    assert expected["retry"] == 2 and expected["archived"] == 1 and expected["scheduled"] == 1
    console.wait_for(lambda d: d.execute_script(BAR) == expected, f"the live bar to read {expected}")
    console.get(page)  # a fresh load shows what the live bar showed
    assert console.driver.execute_script(BAR) == expected


def test_quiet_all_quiets_two_real_workers(site, workers):
    console, inspector = site["console"], site["inspector"]
    redis.Redis.from_url(site["redis_url"]).flushdb()
    procs = [start_worker(site, workers, f"quiet-{n}") for n in range(2)]
    wait_for(lambda: {s.pid for s in inspector.servers()} == {p.pid for p in procs}, timeout=30, what="both up")
    console.get("/servers/")
    live(console)
    assert console.find("[data-live-rss]").text.endswith("MB")
    ages = [e.text for e in console.driver.find_elements("css selector", "[data-heartbeat-age]")]
    assert len(ages) == 2 and all(age.endswith(" s ago") for age in ages)
    console.click("form[data-fleet-action='quiet'] button")
    assert console.confirm().startswith("Quiet all 2 active servers?")
    console.wait_text("2 servers quieted", ".messages")  # both acknowledged before the page came back
    assert {s.status for s in inspector.servers()} == {"quiet"}
    badges = console.driver.find_elements("css selector", "[data-live-server-status]")
    assert [b.text for b in badges] == ["quiet", "quiet"]
    assert not console.driver.find_elements("css selector", "form[data-fleet-action='quiet']")  # none left to quiet
    with Client(site["redis_url"]) as client:
        held = client.enqueue("test:record", {}, queue="work").id
    console.wait_for(lambda d: d.execute_script(BAR)["pending"] == 1, "the bar to count the held task")
    assert inspector.get_task("work", held).state == "pending"  # a quiet worker fetches nothing
    assert all(proc.poll() is None for proc in procs)  # quiet, not stopped
