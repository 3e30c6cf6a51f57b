"""A malformed ``REDIS_URL``, met by the real ``manage.py`` in a subprocess, as an operator meets it.

Start-up builds nothing from the URL, so no command dies with a traceback from the queues app: every command that
runs the system checks refuses with taskq.E103, naming the setting, and one that runs none (the ``tasks`` CLI, the
ASGI application daphne loads) fails at its first use of Redis with the same text, or, having none, starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Malformed, each in its own way: no port, a scheme taskq does not speak, a port that is no number.
BAD_URLS = ["redis://:::bad", "http://x", "redis://host:notaport/0"]


def manage(redis_url: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "taskq.console.settings"}
    return subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def refused_with_e103(run: subprocess.CompletedProcess[str], url: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "Traceback" not in output, output
    assert f'(taskq.E103) REDIS_URL: bad Redis URL "{url}"' in output, output


@pytest.mark.parametrize("url", BAD_URLS)
def test_check_reports_e103(url):
    refused_with_e103(manage(url, "check"), url)


@pytest.mark.parametrize("argv", [["migrate"], ["taskworker", "--queues", "mail"], ["taskscheduler"]])
def test_commands_that_run_checks_refuse_to_start(argv):
    url = "redis://host:notaport/0"
    run = manage(url, *argv)
    refused_with_e103(run, url)
    assert "SystemCheckError" in run.stderr


@pytest.mark.parametrize("url", BAD_URLS)
def test_the_cli_fails_at_first_use_with_one_named_line(url):
    """``tasks`` runs no checks (its stdout is for scripts): its first use of Redis names the setting."""
    run = manage(url, "tasks", "stats")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.startswith(f'error: REDIS_URL: bad Redis URL "{url}": '), run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_the_asgi_application_loads():
    """What daphne does at start-up (it runs no checks): the console comes up, and its pages say what is wrong
    (tests/console/test_console_bad_input.py)."""
    script = "import taskq.console.asgi; print(type(taskq.console.asgi.application).__name__)"
    environment = {**os.environ, "REDIS_URL": "redis://:::bad", "DJANGO_SETTINGS_MODULE": "taskq.console.settings"}
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
    assert (run.returncode, run.stdout) == (0, "ProtocolTypeRouter\n"), run.stderr


def test_a_password_is_left_out():
    url = "redis://ada:s3cret@host:notaport/0"
    run = manage(url, "check")
    assert run.returncode == 1
    assert "s3cret" not in run.stdout + run.stderr
    assert '(taskq.E103) REDIS_URL: bad Redis URL "redis://ada:***@host:notaport/0"' in run.stderr
