"""The real thing: ``python manage.py tasks ...`` in a subprocess, as scripts and operators run it.

Proves what in-process tests cannot: Django's start-up and logging leave stdout alone, --json works after
Django's own argument handling, and exit statuses reach the shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tasks(redis_url: str, *argv: str, noisy: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the CLI; ``noisy`` turns logging and warnings up as far as the settings allow (all on stderr)."""
    environment = {
        **os.environ,
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
        "LOG_LEVEL": "INFO",
        "DJANGO_LOG_LEVEL": "INFO",
    }
    if noisy:
        environment.update(LOG_LEVEL="DEBUG", DJANGO_LOG_LEVEL="DEBUG", PYTHONWARNINGS="always")
    return subprocess.run(
        [sys.executable, "manage.py", "tasks", *argv],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def url(redis_url, redis_client):
    return redis_url


def test_enqueue_then_inspect_with_json_first_and_last(url):
    enqueued = tasks(url, "task", "enqueue", "email:deliver", "--payload", '{"to": "ada@example.com"}')
    assert enqueued.returncode == 0, enqueued.stderr
    task_id = enqueued.stdout.strip()
    assert enqueued.stdout == task_id + "\n" and task_id.isalnum()

    last = tasks(url, "queue", "inspect", "default", "--json", noisy=True)
    first = tasks(url, "--json", "queue", "inspect", "default", noisy=True)
    for run in (last, first):
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)  # the whole of stdout is one document
        assert (doc["queue"], doc["pending"], doc["size"]) == ("default", 1, 1)

    task = json.loads(tasks(url, "task", "inspect", task_id, "--queue", "default", "--json").stdout)
    assert task["payload"] == '{"to":"ada@example.com"}'


def test_every_read_command_emits_only_json(url):
    assert tasks(url, "task", "enqueue", "t", "--payload", "1", "--json").returncode == 0
    for argv in (
        ["stats"],
        ["queue", "ls"],
        ["queue", "history", "default", "--days", "2"],
        ["server", "ls"],
        ["task", "ls", "--queue", "default", "--state", "pending"],
    ):
        run = tasks(url, *argv, "--json", noisy=True)
        assert run.returncode == 0, (argv, run.stderr)
        json.loads(run.stdout)


def test_failures_under_debug_logging_still_leave_stdout_empty(url):
    run = tasks(url, "task", "inspect", "x", "--queue", "nope", "--json", noisy=True)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.endswith('error: queue "nope" not found\n')


def test_not_found_exits_1_with_one_line(url):
    run = tasks(url, "queue", "inspect", "nope", "--json")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == 'error: queue "nope" not found\n'


def test_usage_error_exits_2_with_one_line(url):
    run = tasks(url, "task", "enqueue", "t", "--payload", "{not json", "--json")
    assert (run.returncode, run.stdout) == (2, "")
    assert len(run.stderr.splitlines()) == 1
    assert "--payload: not valid JSON" in run.stderr


def test_redis_unreachable_exits_1_with_one_line():
    run = tasks("redis://127.0.0.1:1/3", "--json", "stats")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.startswith("error: Redis is unreachable:")
    assert len(run.stderr.splitlines()) == 1


def test_django_options_do_not_interfere(url):
    # --verbosity and --settings belong to Django's own commands; here they are the CLI's usage errors.
    run = tasks(url, "queue", "ls", "--verbosity", "2")
    assert run.returncode == 2
    assert "unrecognized arguments: --verbosity 2" in run.stderr
