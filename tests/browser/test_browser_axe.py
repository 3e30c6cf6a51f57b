"""axe-core on every console page, in a real headless Chromium, with seeded data: no colour-contrast violation
and no violation axe rates serious or critical, in the light and the dark theme.

axe-core comes from PyPI inside selenium-axe-python (the test extras): nothing is downloaded at test time. One test
per theme visits every page; its failure names each page that fails, with each violation and the offending elements.
"""

from __future__ import annotations

from typing import Any

import pytest

from taskq.queues.engine.failures import Failure
from taskq.queues.engine.keys import STATES
from tests.scheduler.scheduler_support import fire_some

pytestmark = pytest.mark.browser

#: What fails a page: every colour-contrast finding, and anything axe rates serious or critical.
FAILING_IMPACTS = ("serious", "critical")
THEMES = ("light", "dark")

#: Every page of the console (the paths use the ids ``seeded`` returns).
PAGES = {
    "dashboard": "/",
    **{f"queue-{state}": f"/queues/emails/?state={state}" for state in STATES},
    "queue-filtered": "/queues/emails/?state=pending&type=email:&text=example",
    "queue-paused": "/queues/low/",
    "task": "/queues/emails/tasks/{archived}/",
    "task-edit": "/queues/emails/tasks/{archived}/edit/",
    "task-new": "/tasks/new/?queue=emails&type=email:deliver",
    "task-again": "/queues/emails/tasks/{archived}/again/",
    "task-type": "/queues/emails/types/email:deliver/",
    "servers": "/servers/",
    "server": "/servers/{server}/",
    "search": "/search/?q=queue:emails+type:email:*",  # and with the query box's list open: ``completing``
    "schedulers": "/schedulers/",
    "history": "/history/",
    "workflows": "/workflows/",
    "workflow": "/queues/flows/workflows/wf-1/",
    "redis": "/redis/",
    "settings": "/settings/",
    "rq-index": "/rq/",
    "rq-queue": "/rq/default/",
    "rq-job": "/rq/default/jobs/{rq_job}/",
    "not-found": "/queues/emails/tasks/no-such-task/",
    "admin-index": "/admin/",
}


def seeded(engine: Any, seed: Any, redis_url: str) -> dict[str, str]:
    """Tasks in every state (queue ``emails``; a failure with its traceback and error group, a task waiting on
    another), a worker server, a workflow, a cron entry that has fired, an RQ job, a paused queue and two days of
    history: what the pages show. Returns the ids the page paths need."""
    from datetime import UTC, datetime, timedelta

    import django_rq

    from taskq.queues.engine import Client, chain, sig
    from taskq.queues.history.models import TaskDailyRollup

    seed.active(queue="emails", task_type="email:deliver")  # first: the seeder leases the queue's only pending task
    seed.retry(queue="emails", task_type="email:deliver", error="SMTP 451: greylisted")
    # A failure as the worker captures it: its traceback (folded on the task page) and its error group.
    bounced = Failure("SMTPRecipientsRefused", "550 no such user 4711", "mail.tasks:deliver",
                      'Traceback (most recent call last):\n  File "mail/tasks.py", line 12, in deliver\n'
                      "SMTPRecipientsRefused: 550 no such user 4711\n")  # fmt: skip
    # Its headers carry a producer's and an operator's trace context: the page shows both trace ids.
    traced = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
              "taskq-operator-traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}  # fmt: skip
    archived = seed.archived(
        queue="emails", task_type="email:deliver", error=bounced.error, failure=bounced, headers=traced
    )
    seed.completed(queue="emails", task_type="email:deliver")
    seed.scheduled(queue="emails", task_type="email:digest")
    for n in range(3):
        seed.pending("email:deliver", {"to": f"user{n}@example.com"}, queue="emails")
    seed.client.enqueue("email:line", {"line": 1}, group="user:42", queue="emails")
    first = seed.client.enqueue("email:digest", {}, queue="emails", process_in=3600)
    seed.client.enqueue("email:summary", {}, queue="emails", after=[first.id])  # the waiting tab
    seed.server("host-1:42", running={})
    client = Client(redis_url, policies=False)
    client.submit(chain(sig("fetch", 1), sig("store", 2)), queue="flows", workflow_id="wf-1")
    client.close()
    fire_some(redis_url)
    rq_job = django_rq.get_queue("default").enqueue("tests.rq.rq_jobs.add", 1, 2)
    engine.pause_queue("low")  # a paused badge
    today = datetime.now(UTC).date()
    for days_ago, ok, bad in ((1, 90, 10), (0, 80, 20)):
        TaskDailyRollup.objects.create(
            day=today - timedelta(days=days_ago), queue="emails", task_type="email:deliver", enqueued=ok + bad,
            started=ok + bad, succeeded=ok, failed=bad, failure_rate=bad / (ok + bad), wait_p50_ms=12, wait_p95_ms=40,
            wait_p99_ms=90, run_p50_ms=300, run_p95_ms=900, run_p99_ms=1500,
        )  # fmt: skip
    return {"archived": archived, "server": "host-1:42", "rq_job": rq_job.id}


def violations(driver: Any) -> list[dict[str, Any]]:
    from selenium_axe_python import Axe

    axe = Axe(driver)
    axe.inject()
    results = axe.run(options={"resultTypes": ["violations"]})
    return [v for v in results["violations"] if v["id"] == "color-contrast" or v.get("impact") in FAILING_IMPACTS]


def report(found: list[dict[str, Any]]) -> str:
    lines = []
    for v in found:
        lines.append(f"{v['id']} ({v.get('impact')}): {v['help']}")
        for node in v["nodes"][:8]:
            lines.append(f"    {' '.join(node['target'])}: {node.get('failureSummary', '').splitlines()[-1:]}")
    return "\n".join(lines)


def as_editing_staff(console: Any, theme: str) -> None:
    """The operator may also edit and create tasks and open the admin (so those pages are reached), in ``theme``."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.get(username=console.username)
    user.is_staff = True
    user.save()
    user.user_permissions.add(*Permission.objects.filter(codename__in=["edit_task", "create_task"]))
    console.prefer(theme=theme)


def completing(console: Any) -> Any:
    """The search page with the query box's list open and its second option highlighted (the combobox's open
    state: aria-expanded, aria-activedescendant, the listbox and its options); returns the driver."""
    from selenium.webdriver.common.keys import Keys

    console.get("/search/")
    box = console.find("#search-q")
    box.send_keys("state:")
    console.wait_for(lambda d: len(console.find_all("#search-q-options [role=option]")) > 1, "the list open")
    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    console.wait_for(lambda d: box.get_attribute("aria-activedescendant") == "search-q-options-1", "an option lit")
    return console.driver


@pytest.mark.parametrize("theme", THEMES)
def test_every_page_passes_axe(console, engine, seed, redis_url, settings, theme):
    """Every page in one browser session, seeded once: the failure names each page that fails, and what fails."""
    settings.RQ_QUEUES = {"default": {"URL": redis_url}}
    ids = seeded(engine, seed, redis_url)
    as_editing_staff(console, theme)
    console.login("/")
    failing = {}
    for page, path in PAGES.items():
        console.get(path.format(**ids))
        console.find("main h1")
        found = violations(console.driver)
        if found:
            failing[page] = report(found)
    found = violations(completing(console))
    if found:
        failing["search-completing"] = report(found)
    assert not failing, "\n".join(f"{page} ({theme}):\n{found}" for page, found in failing.items())


@pytest.mark.parametrize("theme", THEMES)
def test_login_page_passes_axe(console, settings, theme, driver):
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": theme}]}
    )
    console.get("/accounts/login/")
    console.find("form[action*='login']")
    found = violations(driver)
    assert not found, f"login ({theme}):\n{report(found)}"
