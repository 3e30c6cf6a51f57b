"""The console in a real headless Chromium: log in, read the dashboard, open a queue, pause and resume it while a
real worker runs, run an archived task again, read a task's page. The documentation's screenshots are taken on daphne,
live: tests/live/test_live_screenshots.py.

No assertion is about time: the tests wait (generously) for a state, never for a duration.
"""

from __future__ import annotations

import pytest
from browser_support import seed_mails_and_an_sms

from tests.worker.worker_support import state_of, wait_for

pytestmark = pytest.mark.browser


def queue_row(console, queue: str):
    """The dashboard's table row of ``queue``."""
    return console.find(f"#queues-table tr:has(a[href='/queues/{queue}/'])")


def test_login_form_then_dashboard_lists_the_queues(console, seed):
    seed.pending(queue="emails")
    seed.pending(queue="emails")
    seed.archived(queue="critical")

    console.get("/")
    assert "/accounts/login/" in console.driver.current_url  # anonymous: sent to the login form
    console.driver.find_element("name", "username").send_keys(console.username)
    console.driver.find_element("name", "password").send_keys("not the password")
    console.click("form[action*='login'] button[type=submit]")
    console.wait_text("didn't match")

    console.login()
    console.wait_text("Dashboard", "h1")
    assert console.find(".topbar .who").text == console.username
    assert "Queue size by state" in console.text() and console.find_all("svg.chart")
    assert queue_row(console, "emails").find_element("css selector", "td:nth-child(3)").text == "2"
    assert queue_row(console, "critical").find_element("css selector", ".badge").text == "run"


def test_open_a_queue_from_the_dashboard(console, seed):
    # Archived first: the seeder leases the queue's only pending task to move it there.
    archived = seed.archived(queue="emails", task_type="email:bounce", error="550 no such user")
    pending = [seed.pending("email:deliver", {"to": f"user{n}@example.com"}, queue="emails") for n in range(3)]

    console.login()
    console.click("#queues-table a[href='/queues/emails/']")
    console.wait_text("emails", "h1")
    tabs = {a.text.split()[0]: a.text.split()[-1] for a in console.find_all("nav.tabs a")}
    assert tabs["pending"] == "3" and tabs["archived"] == "1" and tabs["active"] == "0"
    console.click("nav.tabs a[href*='state=pending']")
    console.wait_text("user0@example.com", "table.tasks")
    ids = {a.get_attribute("title") for a in console.find_all("table.tasks td.id a")}
    assert ids == set(pending)

    console.click("nav.tabs a[href*='state=archived']")
    console.wait_text("550 no such user", "table.tasks")
    assert {a.get_attribute("title") for a in console.find_all("table.tasks td.id a")} == {archived}
    assert "email:bounce" in console.text("section.card:has(table.sortable)")  # the per-type breakdown


def test_pause_on_the_dashboard_stops_dequeue_until_resumed(console, engine, seed, start_worker):
    # Strict order, emails first: every fetch asks emails before control, so a control task being run proves the
    # worker asked the paused emails queue (and got nothing) after the emails task was enqueued.
    start_worker(queues={"emails": 2, "control": 1}, strict=True)
    first = seed.pending("echo:first", {"n": 1}, queue="emails", retention=600)
    wait_for(lambda: state_of(engine, "emails", first) == "completed", what="the worker to run a task")

    console.login()
    queue_row(console, "emails").find_element("css selector", "form[action$='/pause/'] button").click()
    assert "Pause queue “emails”" in console.confirm()
    console.wait_text("Queue emails paused", ".messages")
    assert queue_row(console, "emails").find_element("css selector", ".badge").text == "paused"
    assert engine.queue_info("emails").paused

    held = seed.pending("echo:held", {"n": 2}, queue="emails", retention=600)
    probe = seed.pending("echo:probe", {"n": 3}, queue="control", retention=600)
    wait_for(lambda: state_of(engine, "control", probe) == "completed", what="the worker to run the probe")
    assert state_of(engine, "emails", held) == "pending"

    console.get("/queues/emails/?state=pending")
    assert [a.get_attribute("title") for a in console.find_all("table.tasks td.id a")] == [held]

    console.get("/")
    queue_row(console, "emails").find_element("css selector", "form[action$='/resume/'] button").click()
    console.wait_text("Queue emails resumed", ".messages")
    wait_for(lambda: state_of(engine, "emails", held) == "completed", what="the held task to run after resume")
    console.get("/queues/emails/?state=completed")
    assert {a.get_attribute("title") for a in console.find_all("table.tasks td.id a")} == {first, held}


def test_run_an_archived_task_from_the_archived_tab(console, engine, seed, start_worker):
    task_id = seed.archived(
        queue="emails", task_type="echo:again", payload={"attempt": "second"}, error="SMTP 554: rejected", retention=600
    )
    start_worker(queues={"emails": 1})

    console.login("/queues/emails/?state=archived")
    console.wait_text("SMTP 554: rejected", "table.tasks")
    console.click(f"input[name=task_ids][value='{task_id}']")
    console.wait_text("1 selected", ".batch-bar")
    console.click("button[name=action][value=run]")
    assert console.confirm() == "Run 1 selected task?"
    console.wait_text("1 task moved to pending", ".messages")

    wait_for(lambda: state_of(engine, "emails", task_id) == "completed", what="the archived task to run again")
    console.get("/queues/emails/?state=completed")
    console.click(f"table.tasks a[title='{task_id}']")
    console.wait_text("completed", ".badge")
    assert '"echoed"' in console.text("section.card:has(h2) pre") or "echoed" in console.text()
    history = console.text("section.card:last-of-type table")
    assert "archived" in history and "completed" in history


def test_task_detail_shows_its_fields(console, seed):
    task_id = seed.retry(
        queue="emails",
        task_type="report:weekly",
        payload={"report": "weekly", "pages": 3},
        error="SMTP 451: try later",
        headers={"trace": "t-42"},
        timeout=90,
        max_retry=5,
    )

    console.login("/queues/emails/?state=retry")
    console.click(f"table.tasks a[title='{task_id}']")
    console.wait_text(task_id, "h1")
    fields = dict(
        zip(
            [dt.text for dt in console.find_all("dl.fields dt")],
            [dd.text for dd in console.find_all("dl.fields dd")],
            strict=True,
        )
    )
    assert fields["ID"] == task_id
    assert fields["Type"] == "report:weekly"
    assert fields["State"].startswith("retry since ")
    assert fields["Queue"] == "emails"
    assert fields["Retries"] == "retry 1 of 5 due"
    assert "SMTP 451: try later" in fields["Last error"] and "UTC" in fields["Last error"]
    assert fields["Next process time"].endswith("UTC")
    assert fields["Timeout"] == "1m 30s"
    assert console.find(".badge.state-retry").text == "retry"
    page = console.text()
    assert '"report": "weekly"' in page  # the payload, pretty-printed JSON
    assert "trace" in page and "t-42" in page  # headers
    history = [row.text for row in console.find_all("[data-live-history] tr")]
    assert len(history) == 3 and "pending" in history[1] and "retry" in history[2]


def test_keyboard_shortcuts_search_go_to_and_the_list(console, seed):
    from urllib.parse import urlparse

    from selenium.webdriver.common.keys import Keys

    seed.pending(queue="emails")
    console.login("/queues/emails/?state=pending")
    body = console.find("body")
    body.send_keys("/")
    assert console.driver.switch_to.active_element.get_attribute("type") == "search"
    console.driver.switch_to.active_element.send_keys("g", "s")  # typed into the field: no navigation
    assert "/queues/emails/" in console.driver.current_url
    console.driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    console.find("h1").click()
    console.find("body").send_keys("?")
    console.wait_for(lambda d: console.find("dialog#shortcuts").get_attribute("open") is not None, "the list")
    assert "go to servers" in console.find("dialog#shortcuts").text
    console.find("body").send_keys(Keys.ESCAPE)
    console.wait_for(lambda d: console.find("dialog#shortcuts").get_attribute("open") is None, "the list closed")
    console.find("body").send_keys("g", "s")
    console.wait_for(lambda d: d.current_url.endswith("/servers/"), "g s: the servers page")
    console.find("body").send_keys("g", "d")
    console.wait_for(lambda d: urlparse(d.current_url).path == "/", "g d: the dashboard")


def test_edit_and_retry_an_archived_task(console, engine, seed, operator):
    from django.contrib.auth.models import Permission

    operator.user_permissions.add(Permission.objects.get(codename="edit_task", content_type__app_label="taskq"))
    task_id = seed.archived(queue="emails", task_type="email:deliver", error="550 no such user")
    console.login(f"/queues/emails/tasks/{task_id}/")
    console.click("a[href$='/edit/']")
    box = console.find("textarea[name=payload]")
    assert "ada@example.com" in box.get_attribute("value")
    box.clear()
    box.send_keys('{"to": "grace@example.com"}')
    console.find("input[name=max_retry]").clear()
    console.find("input[name=max_retry]").send_keys("1")
    console.click("main form button[type=submit]")
    assert "Edit task" in console.confirm()
    console.wait_text("edited and moved to pending", ".messages")
    # The timeline: the failed attempt, with its worker, outcome, error and lease token; the edit as an action.
    rows = console.find_all("table.timeline tbody tr")
    assert len(rows) == 1 and "failed, archived" in rows[0].text and "tok-1" in rows[0].text
    assert "edit_task" in console.text("main")
    task = engine.get_task("emails", task_id)
    assert (task.state, task.json(), task.max_retry) == ("pending", {"to": "grace@example.com"}, 1)


def test_search_with_an_action_on_every_match_over_two_pages(console, engine, seed):
    console.prefer(rows_per_page=10)
    seed_mails_and_an_sms(seed)
    console.login("/")
    console.click("header a[href='/search/']")
    box = console.find("input[name=q]")
    box.send_keys("queue:emails type:email:* payload.to:*@example.com")
    console.click("main form[role=search] button[type=submit]")
    console.wait_text("12 matches", "main")
    assert len(console.find_all("table.tasks tbody tr")) == 10
    console.click("nav.pager a")  # page 2
    console.wait_for(lambda d: len(console.find_all("table.tasks tbody tr")) == 2, "the second page")
    console.click("button[value=archive]")
    assert "Archive all 12 matching tasks whose state allows it?" in console.confirm()
    console.wait_text("12 matching tasks archived", ".messages")
    info = engine.queue_info("emails")
    assert (info.archived, info.pending) == (12, 1)  # the sms task did not match


@pytest.mark.parametrize("width", [375, 1920])
def test_every_main_page_fits_a_phone_and_a_wide_screen(console, engine, seed, start_worker, width):
    """At 375 px (and 1920) nothing runs past the screen's width: tables scroll inside their cards, the top bar
    wraps."""
    task_id = seed.retry(queue="emails", task_type="email:deliver", error="SMTP 451 greylisted, try again later")
    server = start_worker(queues={"emails": 1})  # after the seeder: it leases the queue's one pending task
    console.login("/")
    console.driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500},
    )
    pages = [
        "/", "/?range=24h", "/queues/emails/?state=retry", f"/queues/emails/tasks/{task_id}/",
        "/queues/emails/types/email:deliver/", "/servers/", f"/servers/{server.config.server_id}/", "/history/",
        "/schedulers/", "/redis/", "/settings/", "/search/?q=type:email:*",
    ]  # fmt: skip
    too_wide = {}
    for path in pages:
        console.get(path)
        console.find("h1")
        scroll = console.driver.execute_script("return document.documentElement.scrollWidth")
        if scroll > width:
            too_wide[path] = scroll
    assert too_wide == {}
