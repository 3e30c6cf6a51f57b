"""Command-line shape: --json anywhere, usage errors as one line with status 2, help on stdout."""

from __future__ import annotations

import json

import pytest

from .helpers import invoke


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "queue", "inspect", "default"],
        ["queue", "--json", "inspect", "default"],
        ["queue", "inspect", "--json", "default"],
        ["queue", "inspect", "default", "--json"],
    ],
)
def test_json_flag_is_accepted_at_every_position(cli, seed, argv):
    seed.pending()
    result = cli(*argv)
    assert result.code == 0, result.err
    assert result.err == ""
    assert json.loads(result.out)["queue"] == "default"


def test_without_json_the_output_is_text(cli, seed):
    seed.pending()
    result = cli("queue", "inspect", "default")
    assert result.code == 0
    assert result.out.startswith("Queue:")
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.out)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ([], "required: COMMAND"),
        (["queue"], "required: COMMAND"),
        (["nope"], "invalid choice: 'nope'"),
        (["queue", "inspect"], "required: QUEUE"),
        (["task", "ls", "--queue", "default"], "required: --state"),
        (["task", "ls", "--queue", "default", "--state", "bogus"], "invalid choice: 'bogus'"),
        (["task", "ls", "--queue", "default", "--state", "pending", "--page", "x"], "--page: expected a positive"),
        (["task", "ls", "--queue", "default", "--state", "pending", "--size", "0"], "--size: expected a positive"),
        (["task", "ls", "--queue", "default", "--state", "pending", "--page", "-3"], "--page"),
        (["queue", "history", "default", "--days", "two"], "--days: expected a positive integer"),
        (["task", "inspect", "abc"], "required: --queue"),
        (["task", "enqueue", "email"], "one of the arguments --payload --payload-base64 is required"),
        (["task", "enqueue", "email", "--payload", "{bad"], "--payload: not valid JSON"),
        (["task", "enqueue", "email", "--payload-base64", "!!"], "--payload-base64: not valid base64"),
        (["task", "enqueue", "email", "--payload", "1", "--timeout", "-5"], "--timeout: expected a number of seconds"),
        (["task", "enqueue", "email", "--payload", "1", "--timeout", "0"], "--timeout: expected a number of seconds"),
        (["task", "enqueue", "email", "--payload", "1", "--timeout", "nan"], "--timeout"),
        (["task", "enqueue", "email", "--payload", "1", "--process-in", "soon"], "--process-in"),
        (["task", "enqueue", "email", "--payload", "1", "--max-retry", "-1"], "--max-retry: expected an integer >= 0"),
        (["task", "runall", "--queue", "default", "--state", "pending"], "invalid choice: 'pending'"),
        (["task", "archiveall", "--queue", "default", "--state", "archived"], "invalid choice: 'archived'"),
        (["task", "deleteall", "--queue", "default", "--state", "active"], "invalid choice: 'active'"),
        (["--json", "queue", "ls", "extra"], "unrecognized arguments: extra"),
    ],
)
def test_usage_errors_exit_2_with_one_line_and_no_stdout(argv, fragment):
    # No Redis is touched: parsing fails before the engine is opened (no fixtures needed).
    result = invoke(*argv)
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert fragment in result.err
    assert "Traceback" not in result.err


def test_usage_error_names_the_subcommand():
    result = invoke("task", "ls", "--queue", "q")
    assert result.err.startswith("tasks task ls: error:")
    assert "see 'tasks task ls --help'" in result.err


@pytest.mark.parametrize("argv", [["--help"], ["task", "--help"], ["task", "enqueue", "-h"]])
def test_help_goes_to_stdout_and_exits_0(argv):
    result = invoke(*argv)
    assert result.code == 0
    assert result.out.startswith("usage: tasks")
    assert result.err == ""


def test_help_lists_every_command():
    assert all(name in invoke("--help").out for name in ("stats", "queue", "task", "server"))
    queue_help = invoke("queue", "--help").out
    assert all(name in queue_help for name in ("ls", "inspect", "history", "pause", "resume", "rm"))
    task_help = invoke("task", "--help").out
    assert all(
        name in task_help
        for name in (
            "ls",
            "inspect",
            "cancel",
            "delete",
            "archive",
            "run",
            "enqueue",
            "deleteall",
            "runall",
            "archiveall",
        )
    )
