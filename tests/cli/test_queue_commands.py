"""``tasks queue ls|inspect|history|pause|resume|rm``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taskq.queues.engine import STATES

#: The CLI's actions write the audit log (a Django model), as the console's do.
pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(seed):
    """Queue ``default`` with one task in each of pending, scheduled, retry, archived and completed (in that
    order of seeding, so dequeue always takes the task just enqueued), and ``critical`` with one pending task."""
    ids = {
        "completed": seed.completed(),
        "archived": seed.archived(),
        "retry": seed.retry(),
        "scheduled": seed.scheduled(),
        "pending": seed.pending(task_type="report:build", payload={"n": 1}),
    }
    seed.pending(queue="critical")
    return ids


def test_queue_ls_lists_every_queue_with_its_counts(cli, busy):
    doc = cli("queue", "ls", "--json").json()
    assert [q["queue"] for q in doc["queues"]] == ["critical", "default"]
    default = doc["queues"][1]
    assert default["size"] == 4  # completed tasks are not counted in the size, as in asynq
    assert default["completed"] == 1
    assert default["paused"] is False


def test_queue_ls_text_is_a_table(cli, busy):
    lines = cli("queue", "ls").out.splitlines()
    assert lines[0].split()[:3] == ["QUEUE", "STATE", "SIZE"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split()[:3] == ["critical", "run", "1"]
    assert lines[3].split()[:3] == ["default", "run", "4"]


def test_queue_ls_without_queues(cli):
    assert cli("queue", "ls", "--json").json() == {"queues": []}
    assert cli("queue", "ls").out == "No queues.\n"


def test_queue_inspect_json_has_a_field_per_state_and_the_figures(cli, busy):
    doc = cli("queue", "inspect", "default", "--json").json()
    for state in STATES:
        assert isinstance(doc[state], int), state
    assert {s: doc[s] for s in STATES} == {
        "pending": 1,
        "active": 0,
        "scheduled": 1,
        "retry": 1,
        "archived": 1,
        "completed": 1,
        "aggregating": 0,
        "waiting": 0,
    }
    assert doc["queue"] == "default"
    assert doc["size"] == 4
    assert doc["paused"] is False
    assert isinstance(doc["latency_seconds"], float) and doc["latency_seconds"] >= 0
    assert isinstance(doc["memory_bytes"], int) and doc["memory_bytes"] > 0
    # retry and archive each count a failed attempt; complete counts a processed one.
    assert (doc["processed_today"], doc["failed_today"]) == (3, 2)
    assert (doc["processed_total"], doc["failed_total"]) == (3, 2)
    assert doc["types"]["report:build"] == {"pending": 1}


def test_queue_inspect_text(cli, busy):
    text = cli("queue", "inspect", "default").out
    assert "Queue:    default" in text
    assert "State:    run" in text
    assert "Task Count by State" in text
    assert "report:build" in text


def test_queue_inspect_unknown_queue(cli):
    result = cli("queue", "inspect", "nope", "--json")
    assert (result.code, result.out) == (1, "")
    assert result.err == 'error: queue "nope" not found\n'


def test_queue_history_lists_days_newest_first(cli, busy):
    doc = cli("queue", "history", "default", "--days", "3", "--json").json()
    assert doc["queue"] == "default"
    today = datetime.now(UTC).date()
    assert [d["date"] for d in doc["days"]] == [(today - timedelta(days=n)).isoformat() for n in range(3)]
    assert doc["days"][0] == {"date": doc["days"][0]["date"], "processed": 3, "failed": 2, "error_rate": 0.6667}
    assert doc["days"][1]["processed"] == 0


def test_queue_history_defaults_to_a_week_and_prints_a_table(cli, busy):
    assert len(cli("queue", "history", "default", "--json").json()["days"]) == 7
    lines = cli("queue", "history", "default").out.splitlines()
    assert lines[0].split() == ["DATE", "(UTC)", "PROCESSED", "FAILED", "ERROR", "RATE"]
    assert lines[2].split()[1:] == ["3", "2", "66.67%"]


def test_queue_history_refuses_too_many_days(cli, busy):
    result = cli("queue", "history", "default", "--days", "91")
    assert result.code == 2
    assert result.err == "error: invalid input: days must be between 1 and 90, got 91\n"


def test_pause_and_resume(cli, busy):
    assert cli("queue", "pause", "default", "--json").json() == {"queue": "default", "paused": True}
    assert cli("queue", "inspect", "default", "--json").json()["paused"] is True
    assert "paused" in cli("queue", "ls").out

    again = cli("queue", "pause", "default")
    assert again.code == 1
    assert again.err == 'error: cannot pause queue "default": already paused\n'

    result = cli("queue", "resume", "default")
    assert (result.code, result.out) == (0, 'Resumed queue "default"\n')
    assert cli("queue", "inspect", "default", "--json").json()["paused"] is False
    assert cli("queue", "resume", "default").err == 'error: cannot resume queue "default": not paused\n'


def test_pause_unknown_queue(cli):
    result = cli("queue", "pause", "ghost")
    assert (result.code, result.err) == (1, 'error: queue "ghost" not found\n')


def test_rm_refuses_a_queue_with_tasks_unless_forced(cli, busy):
    result = cli("queue", "rm", "default", "--json")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith('error: cannot delete queue "default": ')
    assert "use --force" in result.err

    assert cli("queue", "rm", "default", "--force", "--json").json() == {
        "queue": "default",
        "deleted": True,
        "force": True,
    }
    assert [q["queue"] for q in cli("queue", "ls", "--json").json()["queues"]] == ["critical"]


def test_rm_an_empty_queue(cli, seed):
    task_id = seed.pending(queue="scratch")
    assert cli("task", "delete", task_id, "--queue", "scratch").code == 0
    result = cli("queue", "rm", "scratch")
    assert (result.code, result.out) == (0, 'Deleted queue "scratch"\n')


def test_rm_force_refuses_while_tasks_are_active(cli, seed):
    seed.active(queue="busy")
    result = cli("queue", "rm", "busy", "--force")
    assert result.code == 1
    assert result.err == 'error: cannot delete queue "busy": 1 tasks are active\n'
