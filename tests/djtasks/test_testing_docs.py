"""The examples of docs/testing.md run: each Python block that starts with a file name (``# shop/tasks.py``) is
written to that file of a new project, whose tests a separate pytest run executes, with taskq's plugin and
pytest-django, under settings made here (the page leaves the project's own settings to Django tasks' page). On
Django 5.2 the examples import from the backport, as the page tells its readers to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import redis

from tests.djtasks.tasks import task

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
BLOCK = re.compile(r"```python\n# (?P<path>[\w/]+\.py)\n(?P<code>.*?)```", re.DOTALL)
ON_BACKPORT = not task.__module__.startswith("django.tasks")

SETTINGS = f"""
SECRET_KEY = "testing-docs"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "taskq.queues", "taskq.worker", "shop"]
INSTALLED_APPS += {["django_tasks"] if ON_BACKPORT else []!r}
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}}}
TASKS = {{"default": {{"BACKEND": "taskq.tasks_backend.TaskqBackend"}}}}
"""


def examples() -> dict[str, str]:
    found = {m["path"]: m["code"] for m in BLOCK.finditer(PAGE.read_text())}
    if ON_BACKPORT:
        found = {path: code.replace("django.tasks", "django_tasks") for path, code in found.items()}
    return found


def test_the_examples_of_the_testing_page_pass(tmp_path: Path, taskq_redis_url: str, taskq_redis: redis.Redis):
    files = examples()
    assert set(files) == {
        "shop/tasks.py",
        "tests/test_eager.py",
        "tests/test_eager_on_commit.py",
        "tests/test_worker.py",
        "tests/test_immediate.py",
    }
    (tmp_path / "shop").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "settings.py").write_text(SETTINGS)
    for path, code in files.items():
        (tmp_path / path).write_text(code)
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "DJANGO_SETTINGS_MODULE": "shop.settings",
    }
    for name in ("REDIS_URL", "TASKQ_TEST_REDIS_URL", "TASKS_EAGER"):
        env.pop(name, None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_django.plugin",
            "-p",
            "taskq.worker.testing.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(tmp_path),
            "--taskq-redis-url",
            taskq_redis_url,
            "tests",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 passed" in run.stdout, run.stdout
