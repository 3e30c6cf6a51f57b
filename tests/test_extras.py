"""The extras (pyproject.toml's optional dependencies): the base import path loads none of their packages, and a
feature used without its extra says which extra to install, in a system check and at the point of use.

A missing extra is made by ``sys.modules[name] = None``, Python's documented way to make an import fail: at the
point of use inside a subprocess, so the packages this process already imported are left alone; for the checks,
which only ask the import system whether a package could be imported, with monkeypatch in this process.
scripts/test-oldest.sh also runs the console, API and worker suites in a venv that really lacks the spark, rq
and postgres extras.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from django.core import checks

from taskq.queues import extras_checks
from taskq.queues.engine import extras

REPO = Path(__file__).resolve().parent.parent

#: Every import name the extras bring, and the Postgres driver Django would also take.
EXTRA_PACKAGES = sorted({name for names in extras.EXTRA_MODULES.values() for name in names} | {"psycopg2"})
#: What the base import path must not import: the heavy packages of the extras (django_tasks aside: a project on
#: Django 5.2 that uses the Tasks framework needs it, and it is small).
HEAVY = ["pyspark", "pandas", "pyarrow", "grpc", "psycopg"]


def run_python(code: str, *, blocked: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter of this venv, from the checkout, with ``blocked`` made unimportable."""
    prelude = f"import sys\nfor _name in {blocked!r}:\n    sys.modules[_name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


POINTS_OF_USE = {
    "spark-session": (
        "spark",
        ["pyspark"],
        "from taskq.queues.sparkconf import SparkSettings, build_session\nbuild_session(SparkSettings())",
    ),
    "spark-submit": (
        "spark",
        ["pyspark"],
        "from taskq.worker.spark_submit import spark_submit_path\nspark_submit_path()",
    ),
    "spark-daemons": ("spark", ["pyspark"], "from taskq.worker.spark_daemons import spark_class\nspark_class()"),
    "event-files": ("spark", ["pyarrow"], "import taskq.queues.history.event_files"),
    "rq-bridge": ("rq", ["django_rq", "rq"], "import taskq.console.rq.bridge"),
    "django-tasks": ("django-tasks", ["django_tasks", "django.tasks"], "import taskq.queues.tasks_framework"),
    "uvloop-event-loop": (
        "uvloop",
        ["uvloop"],
        "from taskq.worker.asyncio_pool.event_loops import loop_factory\nloop_factory('uvloop')",
    ),
}


def test_a_postgres_database_url_without_the_driver_names_the_postgres_extra():
    """Django loads the database backend before any system check runs, so the repository's settings say it when
    they read DATABASE_URL, instead of Django's "Error loading psycopg2 or psycopg module"."""
    result = run_python(
        "from django.core.exceptions import ImproperlyConfigured\n"
        "try:\n    import taskq.console.settings\nexcept ImproperlyConfigured as exc:\n    print(exc)\n",
        blocked=["psycopg", "psycopg2"],
        env={"DATABASE_URL": "postgres://taskq@127.0.0.1:5432/shop"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith('pip install "taskq[postgres]"'), result.stdout
    assert result.stdout.startswith("DATABASE_URL (PostgreSQL): the postgres extra is not installed (psycopg missing)")


@pytest.mark.parametrize("feature", sorted(POINTS_OF_USE))
def test_a_feature_without_its_extra_raises_a_named_error_saying_what_to_install(feature):
    extra, blocked, code = POINTS_OF_USE[feature]
    use = "def use():\n" + textwrap.indent(code, "    ") + "\n"
    result = run_python(
        use
        + "from taskq.queues.engine import MissingExtraError\n"
        + "try:\n    use()\nexcept MissingExtraError as exc:\n    print(exc.code, exc, sep='\\n')\n"
        + "else:\n    print('no error')\n",
        blocked=blocked,
        env={"DJANGO_SETTINGS_MODULE": "taskq.console.settings"},
    )
    assert result.returncode == 0, result.stderr
    code_line, message = result.stdout.splitlines()[:2]
    assert code_line == "missing_extra", result.stdout
    assert message.endswith(f'pip install "taskq[{extra}]"'), message
    assert blocked[0] in message  # what is missing is named


def test_the_base_import_path_imports_no_package_of_an_extra(tmp_path):
    """manage.py check, the console's pages (dashboard, a queue, a task, history, metrics), the worker's start (its
    command, its server and every app's handlers) and the ASGI application load none of the extras' heavy
    packages, though this venv has them all: django-rq is blocked, as a base install lacks it (the repository's
    settings then leave the RQ bridge out), and nothing else is."""
    result = run_python(
        f"""
        import django, json
        django.setup()
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.test import Client as Browser
        from django.test.utils import setup_test_environment

        setup_test_environment()
        call_command("migrate", verbosity=0)
        call_command("check")
        from taskq.queues.engine import Client
        info = Client().enqueue("email:send", b"{{}}", queue="extras")
        browser = Browser()
        browser.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
        pages = ["/", "/queues/extras/", f"/queues/extras/tasks/{{info.id}}/", "/history/", "/metrics"]
        statuses = {{page: browser.get(page, REMOTE_ADDR="127.0.0.1").status_code for page in pages}}
        from django.apps import apps
        from taskq.worker.discovery import import_handlers
        from taskq.worker.management.commands import taskworker  # noqa: F401
        from taskq.worker import server  # noqa: F401
        import_handlers([app.name for app in apps.get_app_configs()], [])
        import taskq.console.asgi  # noqa: F401
        print(json.dumps({{"statuses": statuses, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """,
        blocked=["django_rq", "rq"],
        env={
            "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/9"),
            "TASKS_EVENT_EXPORT": "false",
        },
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["loaded"] == []
    assert all(status in (200, 302) for status in report["statuses"].values()), report["statuses"]


def _ids(found: list[checks.CheckMessage]) -> list[str]:
    return sorted(str(m.id) for m in found)


@pytest.fixture
def without(monkeypatch):
    """Make the named packages unimportable for the checks (and only them)."""

    def block(*names: str) -> None:
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)

    return block


def test_a_project_that_configures_no_extra_feature_is_told_nothing(without):
    from taskq.queues import conf

    without(*EXTRA_PACKAGES, "django.tasks")
    quiet = replace(conf.taskq_settings(), event_export=False, spark_master="local[*]", spark_remote="")
    found = [*extras_checks.spark_checks(quiet), *extras_checks.rq_checks(None)]
    found += extras_checks.tasks_checks(None)
    assert found == []


CHECKS = {
    "taskq.E120": ("spark", ["pyarrow"], lambda: extras_checks.spark_checks(_taskq(event_export=True))),
    "taskq.W121": ("spark", ["pyspark"], lambda: extras_checks.spark_checks(_taskq(spark_remote="sc://spark:15002"))),
    "taskq.W122": ("rq", ["django_rq"], lambda: extras_checks.rq_checks({"default": {"URL": "redis://h:6379/9"}})),
    "taskq.E123": (
        "django-tasks",
        ["django_tasks", "django.tasks"],
        lambda: extras_checks.tasks_checks({"default": {"BACKEND": "taskq.tasks_backend.TaskqBackend"}}),
    ),
}


def _taskq(**changes: object):
    from taskq.queues import conf

    return replace(conf.taskq_settings(), **{"event_export": False, **changes})


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_a_configured_feature_without_its_extra_is_a_system_check_naming_the_extra(without, check_id):
    extra, blocked, run_check = CHECKS[check_id]
    if not extras.missing_modules(extra):  # installed here (make venv has every extra): nothing to say
        assert check_id not in [m.id for m in run_check()]
    without(*blocked)
    found = [m for m in run_check() if m.id == check_id]
    assert len(found) == 1
    assert found[0].msg.endswith(f'pip install "taskq[{extra}]"'), found[0].msg


def test_the_checks_are_registered_with_django():
    from django.core.checks.registry import registry as django_checks

    assert extras_checks.check_extras in django_checks.get_checks()


def test_a_spark_handler_of_the_project_asks_for_the_spark_extra(without):
    from taskq.queues import conf
    from taskq.queues.engine import Registry, handler

    handlers = Registry()
    handler("analytics:daily", spark=True, registry=handlers)(lambda task: None)  # taskq's own: not a request
    without("pyspark")
    assert "taskq.W121" not in _ids(extras_checks.spark_checks(conf.taskq_settings(), handlers))
    handler("report:build", spark=True, registry=handlers)(lambda task: None)
    found = [m for m in extras_checks.spark_checks(conf.taskq_settings(), handlers) if m.id == "taskq.W121"]
    assert len(found) == 1 and "Spark handlers report:build" in found[0].msg, found


def test_manage_py_check_reports_the_missing_extra_end_to_end(tmp_path):
    """The repository's own settings, TASKS_EVENT_EXPORT on, pyarrow missing: `manage.py check` fails with E120."""
    result = run_python(
        """
        from django.core.management import execute_from_command_line
        execute_from_command_line(["manage.py", "check"])
        """,
        blocked=["pyarrow"],
        env={
            "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "TASKS_EVENT_EXPORT": "true",
        },
    )
    assert result.returncode != 0
    assert "taskq.E120" in result.stderr and 'pip install "taskq[spark]"' in result.stderr, result.stderr
