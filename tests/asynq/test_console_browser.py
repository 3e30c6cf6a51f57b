"""The console over a Go asynq deployment in a real headless Chromium: axe-core finds nothing on any page (light and
dark), and under daphne the queue page follows a Go server by polling, saying so, while an operator's Pause in the
browser stops the Go server taking tasks from the queue, and the search page follows what moves."""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

import pytest
import redis

from taskq.queues import handles
from taskq.queues.key_format import POLLING_NOTE

from .test_console_pages import PAGES as CONSOLE_PAGES
from .test_console_pages import seed_through_go

# tests/browser's and tests/live's helpers import each other by bare name, as their own conftests arrange.
for _folder in ("browser", "live"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _folder))
from daphne_console import add_user, daphne_console  # noqa: E402

from tests.browser.browser_support import Console  # noqa: E402
from tests.browser.conftest import chromium, console, driver, operator  # noqa: E402, F401
from tests.browser.test_browser_axe import THEMES, as_editing_staff, report, violations  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

WAIT = 60.0  # seconds a Go server gets to do what is expected (a guard, not a timing assertion)

#: Every page the console shows over asynq's keys, those it explains away included (the form it does not offer aside).
PAGES = {name: path for name, (path, _status) in CONSOLE_PAGES.items() if name != "task-new"}


@pytest.mark.parametrize("theme", THEMES)
def test_every_asynq_page_passes_axe(console, go, settings_redis, theme):  # noqa: F811
    seed_through_go(go)
    settings_redis.TASKS_KEY_FORMAT = "asynq"
    handles.reset()
    as_editing_staff(console, theme)
    console.login("/")
    failing = {}
    for page, path in PAGES.items():
        console.get(path)
        console.find("main h1")
        found = violations(console.driver)
        if found:
            failing[page] = report(found)
    handles.reset()
    assert not failing, "\n".join(f"{page} ({theme}):\n{found}" for page, found in failing.items())


def test_the_queue_page_follows_a_go_server_and_its_pause_stops_it(
    driver,  # noqa: F811
    go,
    r: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for n in range(4):
        go.enqueue({"type": "sleep", "payload": base64.b64encode(b"300").decode(), "queue": "web", "task_id": f"w{n}"})
    monkeypatch.setenv("TASKS_KEY_FORMAT", "asynq")
    with daphne_console(tmp_path, redis_url) as served:
        add_user(served.env, "otto", "view_console", "operate_console")
        page = Console(driver, served.url, "otto", tmp_path)
        page.login("/queues/web/?state=pending")
        page.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "live", WAIT)
        assert POLLING_NOTE in page.find("[data-live-status]").text
        driver.execute_script("window.notReloaded = true")  # gone if the page reloads
        assert page.text("[data-live-count=pending]") == "4"
        with go.serving("-queues", "web=1", "-name", "g1", "-concurrency", "1"):
            page.wait_for(lambda d: page.text("[data-live-count=processed_today]") == "4", "Go's work, live", WAIT)
            assert page.text("[data-live-count=pending]") == "0"
            assert driver.execute_script("return window.notReloaded") is True  # followed live, not reloaded
            page.find("form[action$='/pause/'] button").click()
            page.wait_for(lambda d: "/queues/web/" in d.current_url, "back on the queue page")
            assert next(q for q in go("stats") if q["queue"] == "web")["paused"] is True
            go.enqueue({"type": "sleep", "payload": base64.b64encode(b"1").decode(), "queue": "web", "task_id": "w9"})
            page.wait_for(lambda d: page.text("[data-live-count=pending]") == "1", "the new task, live", WAIT)
            time.sleep(3)  # a paused queue: Go's server looks for work every second and must take none
            assert go("task", "web", "w9")["state"] == "pending"
        # The search page reads its matches again when the poller sees counts move.
        page.get("/search/?q=queue:web+state:pending")
        page.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "live", WAIT)
        driver.execute_script("window.notReloaded = true")
        assert "w10" not in page.text("[data-live-search]")
        go.enqueue({"type": "sleep", "queue": "web", "task_id": "w10"})
        page.wait_for(lambda d: "w10" in page.text("[data-live-search]"), "the new match, live", WAIT)
        assert driver.execute_script("return window.notReloaded") is True
