"""The backend's system checks, run as ``manage.py check`` runs them (``django.core.checks.run_checks``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.core import checks

from taskq.queues import tasks_checks
from tests.djtasks import tasks
from tests.djtasks.framework import InvalidTask
from tests.djtasks.settings import TASKS

pytestmark = pytest.mark.usefixtures("tasks_settings")


def taskq_findings() -> list[tuple[str, str]]:
    # Every registered check, as `manage.py check worker` runs them: scoped to an app without models, because the
    # model checks of the others probe the database (Django 6 asks SQLite whether it has JSON), which these tests
    # do not open. The framework's check of the TASKS backends ignores the scope.
    found = checks.run_checks(app_configs=[apps.get_app_config("taskq_worker")])
    return sorted((m.id, m.msg) for m in found if str(m.id).startswith("taskq."))


def ids() -> list[str]:
    return [found_id for found_id, _ in taskq_findings()]


def one_backend(settings, **params):
    settings.TASKS = {"default": {"BACKEND": "taskq.tasks_backend.TaskqBackend", **params}}


def test_a_served_configuration_has_no_finding(taskworker):
    assert taskq_findings() == []


@pytest.mark.parametrize(
    "options",
    [
        {"MAX_RETRIES": "3"},
        {"MAX_RETRIES": -1},
        {"MAX_RETRIES": True},
        {"TIMEOUT": 0},
        {"RESULT_RETENTION": "1d"},
        {"RETENTION": 60},  # not an option of the backend: a typo must not pass unnoticed
    ],
)
def test_options_of_the_wrong_type(settings, options):
    one_backend(settings, OPTIONS=options)
    assert ids() == ["taskq.E101"]
    with pytest.raises(InvalidTask, match="misconfigured"):  # and nothing is enqueued with them
        tasks.add.enqueue(1, 2)


def test_options_that_are_not_a_dict(settings):
    one_backend(settings, OPTIONS=["MAX_RETRIES", 3])
    assert ids() == ["taskq.E101"]


def test_a_queue_taskq_refuses(settings):
    one_backend(settings, QUEUES=["default", "tenant-*"])
    assert ids() == ["taskq.E102"]


def test_a_missing_redis_url(settings):
    del settings.REDIS_URL
    assert "taskq.W103" in ids()


@pytest.mark.parametrize(
    "url", ["", "localhost:6379", "redis+sentinel://", "redis://:::bad", "http://x", "redis://host:notaport/0"]
)
def test_a_bad_redis_url(settings, url):
    """The queues app follows the change without building a client (which would refuse the URL at once): the
    check reports it, once for the process rather than once per backend, and W104 asks Redis nothing."""
    settings.REDIS_URL = url
    assert ids() == ["taskq.E103"]


def test_a_queue_no_worker_is_configured_for(settings):
    """No worker runs and no queue is defined: "default" is what a plain taskworker would serve, the others wait."""
    findings = taskq_findings()
    unserved = sorted(msg.split("queue ")[1].split(" ")[0] for found_id, msg in findings if found_id == "taskq.W104")
    assert unserved == ['"djtasks-mail"', '"djtasks-retry"', '"djtasks-short"']
    assert {found_id for found_id, _ in findings} == {"taskq.W104"}


def unserved_queues() -> list[str]:
    return sorted(msg.split('"')[3] for found_id, msg in taskq_findings() if found_id == "taskq.W104")


def test_the_queues_a_worker_is_about_to_serve(settings):
    """Checks run by a command about to serve queues (``taskworker --queues``) leave those out, by name or
    pattern, and still warn about the others (tests/djtasks/test_worker_checks.py runs the real command)."""
    with tasks_checks.serving({"djtasks-mail"}, ["djtasks-r*"]):
        assert unserved_queues() == ["djtasks-short"]
    assert unserved_queues() == ["djtasks-mail", "djtasks-retry", "djtasks-short"]  # only while it runs


def test_redis_that_does_not_answer(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/3"
    assert set(ids()) == {"taskq.W105"}


def test_the_test_settings_are_the_ones_checked(settings):
    assert settings.TASKS is TASKS


def test_a_project_without_default_auto_field_or_the_metrics_app_gets_no_warning_of_ours(taskq_redis_url):
    # These tests' settings set no DEFAULT_AUTO_FIELD (models.W042 named taskq's models) and leave taskq.metrics out
    # (its taskq.W201 fired all the same, for an app the project does not run).
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.djtasks.settings", "REDIS_URL": taskq_redis_url}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert "models.W042" not in done.stderr + done.stdout and "taskq.W201" not in done.stderr + done.stdout
