"""The system checks a real ``manage.py taskworker`` prints as it starts: taskq.W104 (no worker reads a queue of
``TASKS``) leaves out the queues this worker was started to serve, and still names the others."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taskq.queues.engine import Inspector
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def warned_queues(output: str) -> set[str]:
    """The queues the output's W104 lines name."""
    return set(re.findall(r'\(taskq\.W104\) TASKS\["\w+"\] queue "([^"]+)"', output))


@pytest.mark.parametrize(
    "queues, still_warned",
    [
        ("djtasks-mail", {"djtasks-retry", "djtasks-short"}),
        ("djtasks-mail,djtasks-retry=2", {"djtasks-short"}),
        ("djtasks-*", set()),  # a pattern serves every queue it matches
    ],
)
def test_a_worker_is_not_warned_about_its_own_queues(
    taskq_redis_url: str, inspector: Inspector, tmp_path: Path, queues: str, still_warned: set[str]
) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.djtasks.settings",
        "REDIS_URL": taskq_redis_url,
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "taskworker", "--queues", queues, "--import", "tests.djtasks.tasks"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # The checks print before the worker starts: once it is registered, what they said is in the log.
        wait_for(lambda: proc.poll() is not None or inspector.servers(), what=f"the worker to register ({log_path})")
        assert proc.poll() is None, log_path.read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    output = log_path.read_text()
    assert "System check identified" in output or not still_warned, output  # the checks did run
    assert warned_queues(output) == still_warned, output
