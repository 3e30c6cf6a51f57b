"""asynq's own CLI (built from asynq's repository at v0.26.0 by scripts/ensure-asynq-cli.sh) reads what Python
wrote: ``asynq stats``, ``asynq task ls``, ``asynq task inspect`` and ``asynq group ls`` list the tasks
``AsynqClient`` enqueued, and ``asynq server ls`` lists a Python ``taskworker`` and counts what it processed."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from taskq.queues.engine.asynq import AsynqClient

from .go_asynq import wait_until

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600


@pytest.fixture(scope="module")
def cli_path() -> str:
    """The CLI scripts/ensure-asynq-cli.sh built (``TASKQ_ASYNQ_CLI``, as `make test` exports it, else the script is
    run here); a skip naming the reason where asynq's source could not be had."""
    found = os.environ.get("TASKQ_ASYNQ_CLI")
    if not found:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "ensure-asynq-cli.sh")], capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stderr
        if not done.stdout.strip():
            pytest.skip(done.stderr.strip().splitlines()[-1])
        # The script prints `export TASKQ_ASYNQ_CLI=<path>`, the path quoted for the shell.
        found = shlex.split(done.stdout.strip().partition("=")[2])[0]
    assert Path(found).is_file(), f"TASKQ_ASYNQ_CLI={found} is no file"
    return found


@pytest.fixture
def asynq(cli_path: str, redis_url: str, r, tmp_path: Path):
    """``asynq("task", "ls", ...)``: asynq's CLI on the test's Redis database; its stdout as a list of rows, each
    split into its columns (which the CLI pads with two spaces or more: "error rate" stays one)."""
    url = urlsplit(redis_url)
    where = ["--uri", f"{url.hostname}:{url.port or 6379}", "--db", url.path.strip("/") or "0"]

    def run(*args: str) -> list[list[str]]:
        done = subprocess.run(
            [cli_path, *where, *args], capture_output=True, text=True, timeout=60, env={"HOME": str(tmp_path)}
        )
        assert done.returncode == 0, f"asynq {' '.join(args)}: {done.stderr}"
        return [re.split(r"\s{2,}", line.strip()) for line in done.stdout.splitlines() if line.strip()]

    return run


def table(rows: list[list[str]], title: str) -> dict[str, str]:
    """The one-row table under ``title`` in ``asynq stats``, as {column: value}."""
    start = rows.index([title])
    return dict(zip(rows[start + 1], rows[start + 3], strict=True))


def ids(rows: list[list[str]]) -> list[str]:
    """The ID column of a ``task ls`` table (its header and rule rows left out)."""
    return sorted(row[0] for row in rows[2:])


def test_asynq_stats_task_ls_and_inspect_list_python_enqueued_tasks(asynq, redis_url: str) -> None:
    with AsynqClient(redis_url) as client:
        client.enqueue("email:send", b"1", queue="mail", task_id="p1")
        client.enqueue("email:send", b"2", queue="mail", task_id="p2", unique_ttl=60)
        client.enqueue("email:send", b"3", queue="mail", task_id="s1", process_in=HOUR)
        client.enqueue("digest:add", b"4", queue="mail", task_id="a1", group="user:42")
        client.enqueue("digest:add", b"5", queue="other", task_id="o1", max_retry=7, timeout=30)

    stats = asynq("stats")
    by_state = table(stats, "Task Count by State")
    assert by_state == {
        "active": "0",
        "pending": "3",
        "aggregating": "1",
        "scheduled": "1",
        "retry": "0",
        "archived": "0",
        "completed": "0",
    }
    assert table(stats, "Task Count by Queue") == {"mail": "4", "other": "1"}
    assert sorted(row[0] for row in asynq("queue", "ls")) == ["mail", "other"]

    pending = asynq("task", "ls", "--queue", "mail", "--state", "pending")
    assert pending[0] == ["ID", "Type", "Payload"] and ids(pending) == ["p1", "p2"]
    assert ["p1", "email:send", "1"] in pending
    scheduled = asynq("task", "ls", "--queue", "mail", "--state", "scheduled")
    assert ids(scheduled) == ["s1"] and scheduled[2][:3] == ["s1", "email:send", "3"]
    assert scheduled[2][3] in ("in 1h0m0s", "in 59m59s", "in 59m58s")  # Process In, from the hour asked for
    assert asynq("group", "ls", "--queue", "mail") == [["user:42"]]
    aggregating = asynq("task", "ls", "--queue", "mail", "--state", "aggregating", "--group", "user:42")
    assert aggregating[2] == ["a1", "digest:add", "4", "user:42"]

    lines = ("  ".join(row) for row in asynq("task", "inspect", "--queue", "other", "--id", "o1"))
    inspected = {name: value.strip() for name, _, value in (line.partition(":") for line in lines)}
    assert (inspected["Queue"], inspected["ID"], inspected["Type"]) == ("other", "o1", "digest:add")
    assert (inspected["State"], inspected["Retried"]) == ("pending", "0/7")


def test_asynq_server_ls_lists_a_python_worker_and_stats_count_what_it_ran(asynq, py_worker, redis_url: str) -> None:
    assert asynq("server", "ls") == [["No running servers"]]
    with AsynqClient(redis_url) as client:
        client.enqueue("sleep", b"60000", queue="slow", task_id="long")
        for n in range(3):
            client.enqueue("work", b"", queue="default", task_id=f"w{n}", retention=HOUR)
    proc = py_worker("--queues", "slow=2,default=1", "--concurrency", "3")

    def python_server() -> list[str] | None:
        return next((row for row in asynq("server", "ls")[2:] if str(proc.pid) in row), None)

    # Columns: Host, PID, State, Active Workers (active/concurrency), Queues, Started. A beat every 5 s, as Go's.
    server = wait_until(lambda: (row := python_server()) and row[3] == "1/3" and row, timeout=30)
    assert server[:3] == [socket.gethostname(), str(proc.pid), "active"]
    assert server[4] == "slow:2 default:1"  # by priority, as the CLI orders a Go server's
    assert ids(asynq("task", "ls", "--queue", "slow", "--state", "active")) == ["long"]
    wait_until(
        lambda: ids(asynq("task", "ls", "--queue", "default", "--state", "completed")) == ["w0", "w1", "w2"],
        timeout=30,
    )
    stats = asynq("stats")
    assert table(stats, "Task Count by State")["active"] == "1"
    assert table(stats, "Task Count by State")["completed"] == "3"
    daily = next(row[0] for row in stats if row[0].startswith("Daily Stats "))
    assert table(stats, daily)["processed"] == "3" and table(stats, daily)["failed"] == "0"
