"""``spark:submit`` takes its settings (SPARK_MASTER, SPARK_SUBMIT_ALLOWED_DIRS) from taskq's one settings object, read
once with the worker's: Django's settings when the worker runs under Django, not the environment on each task. The
refusal runs a real worker against a real Redis; it needs no Spark (the path is refused before spark-submit starts)."""

from __future__ import annotations

import pytest
from worker_support import FAST, running_servers, spark_submit_registry, wait_for

from taskq.queues.conf import taskq_settings
from taskq.queues.engine import Registry
from taskq.queues.engine.settings import TaskqSettings
from taskq.worker.config import SubmitSettings, WorkerConfig
from taskq.worker.server import Server
from taskq.worker.spark_submitter import ApplicationNotAllowedError, command


@pytest.fixture
def submit_registry() -> Registry:
    return spark_submit_registry()


def configured_server(redis_url: str, registry: Registry, clock) -> Server:
    """A server as ``taskworker`` builds one: its config from taskq's settings in Django."""
    return Server(WorkerConfig.from_settings(taskq_settings(), redis_url=redis_url, **FAST), registry, clock=clock)


def test_djangos_spark_master_is_what_a_submit_uses(settings, monkeypatch, redis_url, submit_registry, clock):
    monkeypatch.setenv("SPARK_MASTER", "local[3]")  # the environment says otherwise: Django's setting wins
    settings.SPARK_MASTER = "spark://spark-master.example:7077"
    server = configured_server(redis_url, submit_registry, clock)
    try:
        bound = server.processor.bind(submit_registry.route("spark:submit"))
        assert bound.func == server.submitter.run and bound.in_worker  # runs in the worker, with its settings
        assert bound.retry_delay(1, Exception(), None) == 0  # otherwise the handler as registered
        cmd, master, _mode = command({"app": "/jobs/etl.py"}, server.submitter.settings)
        assert master == "spark://spark-master.example:7077"
        assert cmd[cmd.index("--master") + 1] == master
        assert command({"app": "/jobs/etl.py", "master": "local[1]"}, server.submitter.settings)[1] == "local[1]"
    finally:
        server.broker.close()


def test_allowed_dirs_in_djangos_settings_refuse_an_application_outside_them(
    settings, tmp_path, redis_url, submit_registry, clock, client, inspector
):
    jobs, elsewhere = tmp_path / "jobs", tmp_path / "elsewhere"
    settings.SPARK_SUBMIT_ALLOWED_DIRS = [str(jobs)]
    with running_servers() as launch:
        launch(configured_server(redis_url, submit_registry, clock))
        info = client.enqueue("spark:submit", {"app": str(elsewhere / "app.py")}, max_retry=5)
        wait_for(lambda: inspector.get_task("default", info.id).state == "archived", what="the refused submission")
    error = inspector.get_task("default", info.id).last_error
    assert "ApplicationNotAllowedError" in error and "outside SPARK_SUBMIT_ALLOWED_DIRS" in error


def test_an_application_inside_the_allowed_dirs_is_submitted_and_one_outside_refused(tmp_path):
    jobs = tmp_path / "jobs"
    allowed = SubmitSettings(allowed_dirs=(str(jobs),))
    cmd, _master, _mode = command({"app": str(jobs / "etl.py")}, allowed)
    assert cmd[-1] == str(jobs / "etl.py")
    for outside in (tmp_path / "etl.py", jobs / ".." / "etl.py"):
        with pytest.raises(ApplicationNotAllowedError, match="outside SPARK_SUBMIT_ALLOWED_DIRS"):
            command({"app": str(outside)}, allowed)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("/srv/jobs:/opt/etl:", ("/srv/jobs", "/opt/etl")), ("/srv/jobs", ("/srv/jobs",))],
)
def test_allowed_dirs_are_colon_separated_in_the_environment(given, expected):
    assert TaskqSettings.from_env({"SPARK_SUBMIT_ALLOWED_DIRS": given}).spark_submit_allowed_dirs == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [(["/srv/jobs", "/opt/etl"], ("/srv/jobs", "/opt/etl")), ("/srv/jobs:/opt/etl", ("/srv/jobs", "/opt/etl"))],
)
def test_allowed_dirs_in_django_are_a_list_or_colon_separated(given, expected):
    lookup = {"SPARK_SUBMIT_ALLOWED_DIRS": given}
    settings = TaskqSettings.from_lookup(lambda name, missing: lookup.get(name, missing))
    assert settings.spark_submit_allowed_dirs == expected
    assert SubmitSettings.from_settings(settings).allowed_dirs == expected


def test_a_worker_built_without_taskqs_settings_takes_the_allowed_dirs_from_the_environment(monkeypatch):
    monkeypatch.setenv("SPARK_SUBMIT_ALLOWED_DIRS", "/srv/jobs")
    assert WorkerConfig().spark_submit.allowed_dirs == ("/srv/jobs",)


def test_the_allowed_dirs_default_to_any_path():
    assert TaskqSettings().spark_submit_allowed_dirs == () and SubmitSettings().allowed_dirs == ()
    cmd, _master, _mode = command({"app": "/anywhere/app.py"}, SubmitSettings())
    assert cmd[-1] == "/anywhere/app.py"
