"""The pytest plugin, as a user's project meets it: a separate pytest run over a project of its own, with the
plugin loaded by name (the ``pytest11`` entry point that loads it by itself is proven by tests/packaging)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

USER_TESTS = """
import pytest

from taskq.queues.engine import handler

@handler("greet")
def greet(task):
    if task.json()["name"] == "nobody":
        raise ValueError("no one to greet")
    task.write_result({"hello": task.json()["name"]})


def test_a_worker_runs_the_handlers(taskq_client, taskq_worker, taskq_inspector):
    info = taskq_client.enqueue("greet", {"name": "ada"}, retention=60)
    taskq_client.enqueue("greet", {"name": "nobody"}, max_retry=0)
    summary = taskq_worker.run_until_empty()
    assert (summary.processed, summary.failed, summary.counts["archived"]) == (2, 1, 1)
    assert taskq_inspector.get_task("default", info.id).result_json() == {"hello": "ada"}


def test_the_fake_clock_makes_scheduled_tasks_due(taskq_client, taskq_worker, taskq_clock):
    taskq_client.enqueue("greet", {"name": "later"}, process_in=3600)
    assert taskq_worker.run_until_empty().counts["scheduled"] == 1
    taskq_clock.advance(3600)
    assert taskq_worker.run_until_empty().processed == 1


def test_each_test_starts_from_an_empty_database(taskq_redis):
    assert taskq_redis.dbsize() == 0
    taskq_redis.set("left", "behind")


def test_and_the_next_one_too(taskq_redis):
    assert taskq_redis.dbsize() == 0
"""

DB0_TESTS = """
def test_never_runs(taskq_redis):
    raise AssertionError("a fixture on database 0 must not be set up")
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("TASKQ_TEST_REDIS_URL", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "taskq.worker.testing.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(project),
            *args,
            str(project),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_users_tests_get_a_worker_a_client_a_clock_and_a_flushed_database(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    (tmp_path / "test_greet.py").write_text(USER_TESTS)
    redis_client.set("before", "the run")
    run = run_pytest(tmp_path, "--taskq-redis-url", redis_url)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed" in run.stdout
    assert redis_client.dbsize() == 0  # flushed by the plugin, after the last test as before the first


def test_database_0_is_refused_before_anything_is_flushed(tmp_path: Path) -> None:
    (tmp_path / "test_db0.py").write_text(DB0_TESTS)
    run = run_pytest(tmp_path, "--taskq-redis-url", "redis://127.0.0.1:1/0")  # nothing listens there anyway
    assert run.returncode != 0
    assert "selects database 0" in run.stdout + run.stderr
    assert "must not be set up" not in run.stdout


def test_the_plugin_adds_only_taskq_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("")
    run = run_pytest(tmp_path, "--fixtures")
    plugin_section = run.stdout.split("fixtures defined from taskq.worker.testing.pytest_plugin")[1]
    names = {line.split()[0] for line in plugin_section.splitlines() if " -- " in line and not line.startswith(" ")}
    assert names == {
        "taskq_redis_url",
        "taskq_redis",
        "taskq_clock",
        "taskq_client",
        "taskq_inspector",
        "taskq_worker",
        "taskq_settings",
    }
