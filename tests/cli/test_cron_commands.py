"""``tasks cron ls | run | pause | resume | history ENTRY``: against a scheduler that has fired (its heartbeat
publishes its code entry) and entries mirrored from the admin; each action audited, bad input refused with nothing
changed."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.periodic import make_entry
from taskq.queues.engine.scheduler_store import SchedulerStore
from tests.scheduler.scheduler_support import fire_some

pytestmark = pytest.mark.django_db


@pytest.fixture
def fired(cli, redis_url):
    """The code entry of a scheduler that fired three ticks (every 10 s on queue low), and its first tick (ms)."""
    return fire_some(redis_url)


@pytest.fixture
def admin_entries(redis_url):
    """Admin entries as the admin mirrors them: two share the name "twin", one is "nightly"."""
    entries = [
        make_entry("0 3 * * *", "backup:run", {}, source="admin", name="nightly"),
        make_entry("0 4 * * *", "report:a", {}, source="admin", name="twin"),
        make_entry("0 5 * * *", "report:b", {}, source="admin", name="twin"),
    ]
    broker = Broker(redis_url)
    SchedulerStore(broker).write_config(entries)
    broker.close()
    return entries


def audit():
    from taskq.queues.models import AuditLog

    return [(a.action, a.queue, a.task_ids, a.username.startswith("cli:")) for a in AuditLog.objects.order_by("id")]


def test_ls_shows_the_next_five_runs_the_latest_outcome_and_the_paused_state(cli, fired):
    entry, start = fired
    (doc,) = cli("cron", "ls", "--json").json()["entries"]
    upcoming = [datetime.fromisoformat(t).timestamp() for t in doc["upcoming"]]
    assert len(upcoming) == 5 and doc["next_run"] == doc["upcoming"][0]
    assert [b - a for a, b in zip(upcoming, upcoming[1:], strict=False)] == [10.0] * 4
    assert doc["previous_run"]["outcome"] == "enqueued" and doc["paused"] is None
    cli("cron", "pause", entry.id)
    (doc,) = cli("cron", "ls", "--json").json()["entries"]
    assert doc["paused"]["by"].startswith("cli:") and doc["paused"]["at"]
    text = cli("cron", "ls").out
    assert entry.id in text and "paused" in text and "enqueued" in text


def test_run_enqueues_now_and_is_audited(cli, fired, redis_client):
    entry, start = fired
    doc = cli("cron", "run", entry.id, "--json").json()
    assert doc["id"] == entry.id and doc["status"] == "enqueued"
    assert doc["task_id"].startswith(f"cron:{entry.id}:") and doc["task_id"].endswith(":manual")
    assert redis_client.hget(f"tq:{{low}}:t:{doc['task_id']}", "state") == b"pending"
    newest = cli("cron", "history", entry.id, "--json").json()["history"][0]
    assert (newest["task_id"], newest["manual"], newest["outcome"]) == (doc["task_id"], True, "enqueued")
    assert audit() == [("run_cron_entry", "low", [doc["task_id"]], True)]
    text = cli("cron", "run", entry.id).out
    assert text.startswith("Enqueued cron:") and "on queue low" in text


def test_pause_and_resume_are_audited_and_refused_twice_without_change(cli, fired, redis_client):
    entry, _ = fired
    assert cli("cron", "pause", entry.id, "--json").json() == {"id": entry.id, "paused": True}
    flag = redis_client.hget("tq:{low}:cron:paused", entry.id)
    again = cli("cron", "pause", entry.id)
    assert (again.code, again.out) == (1, "")
    assert again.err_lines == [f'error: cannot pause periodic entry "{entry.id}": entry {entry.id} is paused already']
    assert redis_client.hget("tq:{low}:cron:paused", entry.id) == flag  # the first pause's record is kept
    assert cli("cron", "resume", entry.id, "--json").json() == {"id": entry.id, "paused": False}
    assert not redis_client.exists("tq:{low}:cron:paused")
    refused = cli("cron", "resume", entry.id)
    assert refused.code == 1 and "is not paused" in refused.err
    assert audit() == [("pause_cron_entry", "low", [], True), ("resume_cron_entry", "low", [], True)]
    assert "no scheduler enqueues it" in cli("cron", "pause", entry.id).out


def test_history_shows_each_runs_outcome_and_how_long_it_ran(cli, fired, redis_url):
    entry, start = fired
    broker = Broker(redis_url)
    ops = broker.transitions
    (leased,) = broker.run(ops.dequeue("low", 1, 60, "w1", "tok-"))  # the oldest tick's task
    broker.run(ops.done("low", [(leased.id, leased.token)], "w1", [broker.clock.now() - 2.5]))
    broker.close()
    history = cli("cron", "history", entry.id, "--json").json()["history"]
    oldest = history[-1]
    first = entry.task_id(start + 10_000)  # the tick after the scheduler's first sight of the entry
    assert (oldest["task_id"], oldest["outcome"], oldest["attempts"]) == (first, "completed", 1)
    assert oldest["ran_seconds"] >= 2.5 and oldest["ended_at"]  # from the handler's start the ack reported
    assert [h["outcome"] for h in history[:-1]] == ["enqueued"]
    text = cli("cron", "history", entry.id).out
    assert "completed" in text and "ATTEMPTS" in text


def test_an_entry_is_named_by_its_id_or_its_unique_name(cli, admin_entries, redis_client):
    nightly = admin_entries[0]
    assert cli("cron", "pause", "nightly", "--json").json() == {"id": nightly.id, "paused": True}
    assert cli("cron", "history", "nightly", "--json").json() == {"id": nightly.id, "history": []}
    twins = cli("cron", "pause", "twin")
    assert (twins.code, twins.out) == (2, "")
    assert '2 periodic entries are named "twin"' in twins.err
    assert admin_entries[1].id in twins.err and admin_entries[2].id in twins.err
    assert cli("cron", "pause", admin_entries[2].id).code == 0  # by id, either twin
    assert redis_client.hkeys("tq:{default}:cron:paused") and len(audit()) == 2


@pytest.mark.parametrize("verb", ["run", "pause", "resume", "history"])
def test_an_unknown_entry_fails_and_changes_nothing(cli, fired, redis_client, verb):
    before = sorted(redis_client.keys("*"))
    result = cli("cron", verb, "nope", "--json")
    assert (result.code, result.out) == (1, "")
    assert result.err_lines == [
        'error: no periodic entry "nope" (no running scheduler has it and the admin defines none with this id or '
        "name) (not_found)"
    ]
    assert sorted(redis_client.keys("*")) == before and audit() == []
    usage = cli("cron", verb)
    assert usage.code == 2 and "ENTRY" in usage.err


def test_every_cron_command_prints_one_json_document(cli, fired):
    entry, _ = fired
    for argv in (["ls"], ["run", entry.id], ["pause", entry.id], ["resume", entry.id], ["history", entry.id]):
        result = cli("--json", "cron", *argv)
        assert result.code == 0, result.err
        json.loads(result.out)
