"""One module identity: each of taskq's files is importable under one name only, ``taskq.<app>...``, in the demo,
in a running worker and (tests/packaging/test_wheel_in_a_project.py) in an installed project.

In a checkout the apps are top-level folders, and the checkout's root is on sys.path (manage.py, the tests, the
demo), so ``import console`` would find them: each app's ``__init__`` refuses that name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taskq import Client, Inspector
from tests.waiting import wait_for
from tests.worker.worker_support import start_taskworker

ROOT = Path(__file__).resolve().parents[1]
PROBE = "from tests.module_identity import files_under_two_names as f; import json; print(json.dumps(f()))"


def python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("app", ["queues", "worker", "console", "metrics"])
def test_an_app_refuses_its_folder_name(app):
    run = python(f"import {app}")
    assert run.returncode == 1
    assert f"ImportError: import taskq.{app}, not {app}: the package's only name is taskq.{app}" in run.stderr


def test_the_demo_loads_each_file_once(redis_url):
    # What the demo's console and commands load: the settings, every app, the URLconf, the checks, the demo's tasks.
    code = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('check', verbosity=0)\n"
        "from django.urls import get_resolver; get_resolver().url_patterns\n"
        "import demo.tasks, taskq.console.asgi, taskq.worker.server\n" + PROBE
    )
    run = python(code, DJANGO_SETTINGS_MODULE="demo.settings", REDIS_URL=redis_url)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == {}


def test_a_running_worker_loads_each_file_once(redis_url, redis_client, processes, tmp_path):
    log = tmp_path / "worker.log"
    worker = start_taskworker(
        processes,
        redis_url,
        log,
        "--queues",
        "identity",
        "--import",
        "tests.module_identity",
        DJANGO_SETTINGS_MODULE="demo.settings",
    )
    info = Client(redis_url).enqueue("identity:probe", {}, queue="identity", retention=60)
    inspector = Inspector(redis_url)
    wait_for(
        lambda: worker.poll() is not None or inspector.get_task("identity", info.id).state == "completed",
        what=f"the probe to run (log: {log})",
    )
    assert worker.poll() is None, log.read_text()
    result = inspector.get_task("identity", info.id).result_json()
    assert result["twice"] == {} and result["taskq_modules"] > 50  # the worker's own modules were looked at
