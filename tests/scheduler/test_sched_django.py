"""The Django side: PeriodicTask validation and mirroring (picked up by a running scheduler without restart), the
Schedulers page with its access rule, and ``tasks cron ls`` / ``tasks cron history``."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from taskq.queues.cli import main
from taskq.queues.models import PeriodicTask
from tests.console.console_support import logged_in, make_user
from tests.scheduler.scheduler_support import fire_some

pytestmark = pytest.mark.django_db


@pytest.fixture
def mirror(django_capture_on_commit_callbacks):
    def run(change):
        with django_capture_on_commit_callbacks(execute=True):
            return change()

    return run


def cli(*argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def out_iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def row(**fields):
    defaults = dict(
        name="ping",
        spec="@every 10s",
        timezone="UTC",
        task_type="health:ping",
        payload={"a": 1},
        queue="default",
        options={},
        missed="skip",
        enabled=True,
    )
    return PeriodicTask(**{**defaults, **fields})


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        ({"spec": "61 * * * *"}, "spec", "out of range"),
        ({"spec": "@sometimes"}, "spec", "unknown macro"),
        ({"timezone": "Mars/Base"}, "timezone", "unknown time zone"),
        ({"options": {"task_id": "x"}}, "options", "cannot be used on a periodic task"),
        ({"options": {"max_retry": "many"}}, "options", "max_retry"),
        ({"options": ["not", "a", "dict"]}, "options", "mapping"),
        ({"queue": "a{b}"}, "queue", "may not contain"),
        ({"task_type": "bad\ntype"}, "task_type", "control characters"),
    ],
)
def test_periodic_task_validation(fields, where, message):
    with pytest.raises(ValidationError) as refused:
        row(**fields).full_clean()
    assert where in refused.value.message_dict
    assert message in " ".join(refused.value.message_dict[where])


def test_a_valid_periodic_task_gives_the_same_entry_as_code():
    from taskq.queues.engine.periodic import make_entry

    task = row(spec="*/5 * * * *", timezone="Europe/Paris", options={"max_retry": 3})
    task.full_clean()
    assert (
        task.entry().id
        == make_entry("*/5 * * * *", "health:ping", {"a": 1}, tz="Europe/Paris", options={"max_retry": 3}).id
    )


def test_admin_entries_reach_a_running_scheduler_without_restart(engine, mirror, redis_url, redis_client):
    from taskq.queues.engine import FakeClock, ScheduleRegistry
    from taskq.worker.scheduler import build

    clock = FakeClock(1_700_000_000.0)
    scheduler = build(redis_url, "tq", registry=ScheduleRegistry(), clock=clock)
    try:
        scheduler.run_once()
        assert scheduler.entries() == []
        task = mirror(lambda: row().save())
        clock.advance(1)
        scheduler.run_once()
        (entry,) = scheduler.entries()
        assert (entry.source, entry.name, entry.type) == ("admin", "ping", "health:ping")
        clock.advance(10)
        scheduler.run_once()
        assert redis_client.llen("tq:{default}:pending") == 1
        task = PeriodicTask.objects.get()
        task.enabled = False
        mirror(task.save)
        clock.advance(10)
        scheduler.run_once()
        assert scheduler.entries() == [] and redis_client.llen("tq:{default}:pending") == 1
    finally:
        scheduler.store.broker.close()


def test_schedulers_page(engine, redis_url):
    entry, start = fire_some(redis_url)
    viewer = logged_in(make_user("vera", "view_console"))
    response = viewer.get("/schedulers/")
    assert response.status_code == 200
    body = response.content.decode()
    assert entry.id in body and "@every 10s" in body and "report:refresh" in body and "{&quot;scope&quot;" in body
    assert f'href="/queues/low/tasks/{entry.task_id(start + 20_000)}/"' in body  # the history links its tasks
    assert 'href="/schedulers/"' in body  # the nav link


def test_schedulers_page_marks_a_task_that_is_gone_instead_of_linking_it(engine, redis_url):
    entry, start = fire_some(redis_url)
    gone = entry.task_id(start + 10_000)
    engine.delete_task("low", gone)  # as a success without retention deletes it
    body = logged_in(make_user("vera", "view_console")).get("/schedulers/").content.decode()
    assert f'href="/queues/low/tasks/{gone}/"' not in body
    assert f'<span class="gone" title="{gone} no longer exists' in body
    assert f'href="/queues/low/tasks/{entry.task_id(start + 20_000)}/"' in body  # the one still there is linked


def test_schedulers_page_access(engine):
    assert Client().get("/schedulers/").status_code == 302  # to the login page
    assert logged_in(make_user("nina")).get("/schedulers/").status_code == 403
    assert logged_in(make_user("vera", "view_console")).post("/schedulers/").status_code == 405
    body = logged_in(make_user("otto", "view_console")).get("/schedulers/").content.decode()
    assert "No periodic entry" in body and "No scheduler is running" in body


def test_cron_ls_and_history(engine, redis_url):
    entry, start = fire_some(redis_url)
    code, out, err = cli("cron", "ls", "--json")
    assert code == 0, err
    (doc,) = json.loads(out)["entries"]
    assert (doc["id"], doc["spec"], doc["type"], doc["queue"], doc["payload"]) == (
        entry.id,
        "@every 10s",
        "report:refresh",
        "low",
        '{"scope":"all"}',
    )
    assert doc["previous_run"]["task_id"] == entry.task_id(start + 20_000)
    assert len(doc["schedulers"]) == 1

    code, out, _ = cli("cron", "ls")
    assert code == 0 and entry.id in out and "report:refresh" in out

    code, out, _ = cli("--json", "cron", "history", entry.id)
    history = json.loads(out)["history"]
    assert [h["task_id"] for h in history] == [entry.task_id(start + 20_000), entry.task_id(start + 10_000)]
    assert history[0]["outcome"] == "enqueued" and history[0]["tick"] == out_iso(start + 20_000)
    code, out, _ = cli("cron", "history", entry.id, "--limit", "1")
    assert code == 0 and out.count("cron:") == 1


def test_cron_bad_input(engine):
    code, out, err = cli("cron", "history", "nope")
    assert (code, out) == (1, "") and 'no periodic entry "nope"' in err
    code, out, err = cli("cron", "history", "x", "--limit", "0")
    assert code == 2 and out == ""
    code, out, _ = cli("cron", "ls")
    assert code == 0 and "No periodic entries." in out
