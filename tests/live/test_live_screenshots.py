"""The documentation's screenshots (docs/screenshots, docs/console.md "Console screenshots", and the README's
tour): every main page in a real browser, served by daphne so the pages are live, as an operator sees them. Each
is taken once its page is live ("● live"; "○ not live" on the pages that do not update): on the WSGI live server
of tests/browser the socket never opened and every picture read "reconnecting…".

Not a check of looks (people look at them): proof every main page renders and goes live in a real browser. They are
written to build/screenshots/; ``TASKQ_SCREENSHOT_DIR=docs/screenshots`` refreshes those of the documentation.
"""

from __future__ import annotations

import time

import pytest
from browser_support import Console
from daphne_console import add_user

from taskq.queues.engine.worker_store import WorkerStore
from tests.browser.conftest import SCREENSHOT_DIR, registry, start_worker  # noqa: F401 - fixtures of this module
from tests.worker.worker_support import state_of, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

OPERATOR = "otto"


def seed_the_pages(seed, engine, start_worker) -> str:  # noqa: F811 - the fixture, passed on
    """A small data set with a worker running: returns the id of the task whose page is shown."""
    # Retry and archived first: the seeder leases the queue's only pending task to move it there.
    seed.retry(queue="emails", task_type="email:deliver", error="SMTP 451 4.7.1: try again later", ran=0.84)
    detail = seed.retry(
        queue="emails",
        task_type="email:deliver",
        payload={
            "to": "ada@example.com",
            "cc": ["grace@example.com"],
            "template": "invoice",
            "vars": {"amount": "42.00", "currency": "EUR"},
        },
        error="SMTP 451 4.7.1: greylisted, try again later",
        headers={"trace-id": "4bf92f3577b34da6"},
        timeout=120,
        max_retry=8,
        ran=1.27,
    )
    for n in range(4):
        seed.archived(queue="emails", task_type="email:deliver", error=f"550 5.1.1 user{n}: no such user", ran=0.2)
    for n in range(12):
        seed.pending("email:deliver", {"to": f"user{n}@example.com", "template": "welcome"}, queue="emails")
    for n in range(3):
        seed.scheduled(queue="emails", task_type="email:digest", payload={"digest": n})
    seed.archived(queue="reports", task_type="report:build", error="Timeout after 300s", ran=300)
    for n in range(5):
        seed.pending("report:build", {"report": "weekly", "part": n}, queue="reports")
    seed.pending("webhook:post", {"url": "https://example.com/hook"}, queue="critical")
    start_worker(queues={"critical": 6, "default": 3, "low": 1}, concurrency=4)
    for n in range(6):
        seed.pending("echo:ping", {"n": n}, queue="default", retention=3600)
    running = seed.pending("hold:import", {"file": "customers.csv"}, queue="low")
    wait_for(lambda: state_of(engine, "low", running) == "active", what="a running task")
    wait_for(lambda: engine.queue_info("default").completed == 6, what="the worker to run the default queue")
    engine.pause_queue("reports")
    return detail


def choose_theme(console: Console, theme: str) -> None:
    """As a person would: the settings page saves the theme in the console's own database."""
    console.get("/settings/")
    console.click(f"input[name=theme][value={theme}]")
    console.click("form button[type=submit].primary")
    console.wait_text("Settings saved.", ".messages")
    assert console.find("html").get_attribute("data-theme") == theme


def settled(console: Console, heading: str) -> None:
    """The page is shown and, if it updates by itself, live: what its screenshot must show."""
    console.wait_text(heading, "h1")
    if console.driver.execute_script("return !!document.querySelector('[data-live]')"):
        console.wait_for(
            lambda d: d.execute_script("return window.taskqLive && window.taskqLive.status") == "live", "the page live"
        )
        assert console.find("[data-live-status]").text == "● live"
    else:
        assert console.find("[data-live-status]").text == "○ not live"


def test_screenshots_of_the_main_pages(daphne, driver, engine, seed, start_worker, tmp_path):  # noqa: F811
    from selenium.webdriver.common.keys import Keys

    detail = seed_the_pages(seed, engine, start_worker)
    add_user(daphne.env, OPERATOR, "view_console", "operate_console", "create_task")
    console = Console(driver, daphne.url, OPERATOR, SCREENSHOT_DIR)
    console.login()
    choose_theme(console, "light")
    (server,) = engine.servers()
    pages = {
        "dashboard-light": ("/", "Dashboard"),
        "queue": ("/queues/emails/?state=retry", "emails"),
        "task": (f"/queues/emails/tasks/{detail}/", detail),
        "task-type": ("/queues/default/types/echo:ping/", "echo:ping"),
        "new-task": ("/tasks/new/?queue=emails&type=email:deliver", "New task"),
        "task-again": (f"/queues/emails/tasks/{detail}/again/", "Run again as a new task"),
        "servers": ("/servers/", "Servers"),
        "server": (f"/servers/{server.id}/", f"{server.host}:{server.pid}"),
        "redis": ("/redis/", "Redis"),
        "settings": ("/settings/", "Settings"),
    }
    for name, (path, heading) in pages.items():
        console.get(path)
        settled(console, heading)
        if name == "servers":
            console.click("details summary")
        shot = console.screenshot(name)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The query box completing (issue 27): the payload paths of the emails' retry tasks, one highlighted.
    console.get("/search/?q=queue:emails+state:retry")
    settled(console, "Search")
    box = console.find("#search-q")
    box.send_keys(Keys.END, " payload.")
    console.wait_for(lambda d: "payload.vars.amount:" in console.text("#search-q-options"), "the payload paths")
    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    console.wait_for(lambda d: box.get_attribute("aria-activedescendant") == "search-q-options-1", "an option lit")
    assert console.screenshot("search-complete").stat().st_size > 0

    # A worker whose heartbeat is late (issue 27): its last one 12 s ago, at a 5 s interval; it is lost at 15 s.
    late = "host-7:4242:late"
    beat = int(time.time() * 1000) - 12_000
    record = {"id": late, "host": "host-7", "pid": 4242, "started": beat - 600_000, "status": "active",
              "queues": {"default": 1}, "concurrency": 4, "heartbeat": beat, "heartbeat_every": 5.0,
              "rss": 96 * 1024 * 1024, "cpu": 0.02, "processed": 310}  # fmt: skip
    WorkerStore(engine.broker).write_server(record, {}, ttl=60)
    console.get("/servers/")
    settled(console, "Servers")
    console.wait_text("late", f'tr[data-live-server="{late}"] td.heartbeat')
    assert console.screenshot("servers-late").stat().st_size > 0

    console.get("/queues/default/?state=completed")
    phone = {"width": 375, "height": 800, "deviceScaleFactor": 1, "mobile": True}
    console.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", phone)
    console.driver.refresh()
    settled(console, "default")
    # At 375 px the page fits: nothing runs past the screen's width (tables scroll inside their cards).
    assert console.driver.execute_script("return document.documentElement.scrollWidth") <= 375
    assert console.screenshot("queue-phone", width=375, settle=lambda: settled(console, "default")).stat().st_size

    choose_theme(console, "dark")
    console.get("/")
    settled(console, "Dashboard")
    assert console.screenshot("dashboard-dark").stat().st_size > 0
