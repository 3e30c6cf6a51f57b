"""``tasks task`` on tasks waiting for their dependencies (issue 16): ``ls --state waiting`` lists them with what
they wait on, ``delete`` and ``run`` take them (delete used to answer "task is waiting, cancel it before
deleting", with no way out), and ``stats`` counts them."""

from __future__ import annotations

import pytest

#: The CLI's actions write the audit log (a Django model), as the console's do.
pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(seed) -> tuple[str, str, str]:
    """A is pending; B waits for A; C waits for B."""
    a = seed.pending(task_id="A")
    b = seed.client.enqueue("report:build", {"n": 1}, task_id="B", after=[a]).id
    c = seed.client.enqueue("report:mail", {"n": 2}, task_id="C", after=[b]).id
    return a, b, c


def state_of(cli, task_id: str) -> str | None:
    result = cli("task", "inspect", task_id, "--queue", "default", "--json")
    return result.json()["state"] if result.code == 0 else None


def test_ls_state_waiting_lists_them_with_what_they_wait_on(cli, chain):
    doc = cli("task", "ls", "--queue", "default", "--state", "waiting", "--json").json()
    assert [(t["id"], t["state"], t["waiting_on"]) for t in doc["tasks"]] == [
        ("B", "waiting", ["A"]),
        ("C", "waiting", ["B"]),
    ]
    lines = cli("task", "ls", "--queue", "default", "--state", "waiting").out.splitlines()
    assert lines[0].split() == ["ID", "TYPE", "PAYLOAD", "WAITING", "ON"]
    assert lines[2].split()[0] == "B" and lines[2].split()[-1] == "A"


def test_inspect_names_the_dependencies(cli, chain):
    text = cli("task", "inspect", "B", "--queue", "default").out
    assert "Waiting on" in text and "After" in text
    doc = cli("task", "inspect", "B", "--queue", "default", "--json").json()
    assert (doc["after"], doc["waiting_on"]) == (["A"], ["A"])


def test_delete_takes_a_waiting_task_and_archives_its_dependents(cli, chain):
    result = cli("task", "delete", "B", "--queue", "default")
    assert (result.code, result.out) == (0, 'Deleted task "B" of queue "default"\n')
    assert state_of(cli, "B") is None
    assert state_of(cli, "C") == "archived"
    assert state_of(cli, "A") == "pending"


def test_run_takes_a_waiting_task_now(cli, chain):
    result = cli("task", "run", "B", "--queue", "default")
    assert (result.code, result.out) == (0, 'Queued to run task "B" of queue "default"\n')
    assert state_of(cli, "B") == "pending"
    assert state_of(cli, "C") == "waiting"


def test_stats_counts_waiting_tasks_in_the_size(cli, chain):
    totals = cli("stats", "--json").json()["totals"]
    assert (totals["waiting"], totals["pending"], totals["size"]) == (2, 1, 3)
    assert "WAITING" in cli("stats").out


def test_bad_input_is_a_named_error(cli, chain):
    result = cli("task", "run", "A", "--queue", "default")
    assert (result.code, result.err) == (
        1,
        'error: cannot run task "A" in queue "default": task is pending, it cannot be run now\n',
    )
    result = cli("task", "delete", "ghost", "--queue", "default")
    assert (result.code, result.err) == (1, 'error: task "ghost" in queue "default" not found\n')
    result = cli("task", "ls", "--queue", "default", "--state", "waitin")
    assert result.code == 2 and "invalid choice: 'waitin'" in result.err
    assert state_of(cli, "B") == "waiting"
