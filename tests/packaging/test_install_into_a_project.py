"""The wheel installs into an existing Django project the way docs/getting-started.md says, and its pytest plugin
works there.

The test builds the wheel from a copy of the sources (what an sdist holds: the packages, templates/, static/,
pyproject.toml), installs it with ``--no-deps`` into a fresh venv (no system site-packages), and lends
that venv the *dependencies* of our own venv through a .pth file naming a folder of links to its site-packages
entries, with taskq's own (the editable install's dist-info and finder) left out. So every taskq module, template,
static file, script and entry point the project sees comes from the wheel, and nothing is downloaded but the
build backend (``pip wheel`` fetches setuptools into an isolated build environment from the package index).

Then, in a project made by ``django-admin startproject``: the page's settings and URL includes, ``migrate``,
``check --deploy``, ``findstatic``, a console page and /metrics through Django's test client, and a pytest run of
the project's own tests that uses the shipped fixtures (taskq_settings, taskq_worker, run_until_empty) and
TASKS_EAGER.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.packaging.wheels import build_wheel, run

REPO = Path(__file__).resolve().parents[2]
#: Files the installed apps cannot work without, by where they must be in the wheel.
MUST_SHIP = [
    "taskq/queues/engine/lua/enqueue.lua",
    "taskq/queues/engine/lua/_lib.lua",
    "taskq/queues/engine/asynq/lua/_work.lua",
    "taskq/queues/engine/asynq/lua/work_done.lua",
    "taskq/py.typed",
    "taskq/console/templates/taskq/base.html",
    "taskq/console/templates/taskq/dashboard.html",
    "taskq/console/templates/taskq/login.html",
    "taskq/console/static/taskq/console.css",
    "taskq/queues/templates/admin/taskq/tasks.html",
    "taskq/queues/migrations/0001_initial.py",
    "taskq/queues/migrations/0002_console_groups.py",
    "taskq/console/migrations/0001_initial.py",
    "taskq/queues/management/commands/tasks.py",
    "taskq/worker/management/commands/taskworker.py",
    "taskq/metrics/grafana/dashboards/taskq.json",
    "taskq/metrics/prometheus/prometheus.yml",
    "taskq/worker/testing/pytest_plugin.py",
]

# The settings of docs/getting-started.md, "Add taskq to your project", appended to startproject's settings.py.
SETTINGS = """
INSTALLED_APPS += ["taskq.console", "taskq.queues", "taskq.queues.history", "taskq.worker", "taskq.metrics", "shop"]
REDIS_URL = os.environ["TASKQ_TEST_REDIS_URL"]
"""

ASGI_SETTING = """
ASGI_APPLICATION = "mysite.asgi.application"
"""

ASGI = """
from taskq.asgi import with_taskq

application = with_taskq(application)
"""

URLS = """
from django.urls import include

urlpatterns += [
    path("accounts/", include("django.contrib.auth.urls")),
    path("tasks/", include("taskq.urls")),
]
"""

SHOP_TASKS = """
from taskq import handler

@handler("shop:receipt", queue="mail")
def receipt(task):
    order = task.json()["order"]
    if order < 0:
        raise ValueError("no such order")
    task.write_result({"sent": order})
"""

SHOP_TESTS = """
import pytest

import taskq.worker.testing.pytest_plugin
from taskq.queues.conf import get_client
from shop.tasks import receipt


def test_the_plugin_is_the_installed_one():
    assert taskq.worker.testing.pytest_plugin.__file__.startswith(r"{venv}")


def test_a_handler_runs_on_the_shipped_worker(taskq_settings, taskq_worker, taskq_inspector):
    info = receipt.enqueue({{"order": 7}}, retention=60)
    get_client().enqueue("shop:receipt", {{"order": -1}}, queue="mail", max_retry=0)
    summary = taskq_worker.run_until_empty("mail")
    assert (summary.processed, summary.failed, summary.counts["archived"]) == (2, 1, 1)
    assert taskq_inspector.get_task("mail", info.id).result_json() == {{"sent": 7}}


def test_eager_mode_runs_it_inline(settings, taskq_redis):
    settings.TASKS_EAGER = True
    assert receipt.enqueue({{"order": 8}}).result_json() == {{"sent": 8}}
    with pytest.raises(ValueError, match="no such order"):
        receipt.enqueue({{"order": -1}})
    assert taskq_redis.dbsize() == 0
"""

# Run on its own, apart from test_shop.py, which imports shop.tasks: the worker fixture must find the handler.
DISCOVERY_TESTS = """
import sys

from taskq.queues.conf import get_client

IMPORTED_BEFORE = "shop.tasks" in sys.modules


def test_the_worker_fixture_imports_the_apps_tasks_as_taskworker_does(taskq_settings, taskq_worker):
    assert not IMPORTED_BEFORE and "shop.tasks" in sys.modules
    get_client().enqueue("shop:receipt", {"order": 1}, queue="mail")
    summary = taskq_worker.run_until_empty("mail")
    assert (summary.processed, summary.failed) == (1, 0)
"""

PAGES = """
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment

setup_test_environment()  # the test client's host, as under a test runner
admin = User.objects.create_superuser("ops", "ops@example.com", "pw")
web = Client()
assert web.get("/tasks/").status_code == 302  # login first
web.force_login(admin)
page = web.get("/tasks/")
assert page.status_code == 200 and b"taskq/console.css" in page.content, page.status_code
metrics = web.get("/tasks/metrics")
assert metrics.status_code == 200 and b"taskq_" in metrics.content, metrics.status_code
print("pages ok")
"""


def fresh_venv(work: Path, wheel: Path) -> Path:
    """A venv with the wheel installed and our venv's other packages lent through a .pth file."""
    venv = work / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    lent = work / "lent"
    lent.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        # Leave out taskq itself (the editable install) and .pth files (they would not run from a lent folder).
        if not entry.name.startswith(("taskq-", "__editable__", "__pycache__")) and entry.suffix != ".pth":
            (lent / entry.name).symlink_to(entry)
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work).strip()
    Path(site, "lent-dependencies.pth").write_text(f"{lent}\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel, cwd=work)
    return venv


@pytest.mark.slow
def test_the_wheel_installs_into_an_existing_django_project(tmp_path: Path, redis_client, redis_url: str) -> None:
    wheel = build_wheel(tmp_path)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert not [name for name in MUST_SHIP if name not in shipped]
    # One name at the top of site-packages: taskq (and its metadata); the demo and tests stay out.
    assert {name.split("/")[0] for name in shipped} == {"taskq", "taskq-0.1.0.dist-info"}
    entry_points = zipfile.ZipFile(wheel).read("taskq-0.1.0.dist-info/entry_points.txt").decode()
    assert "[pytest11]\ntaskq = taskq.worker.testing.pytest_plugin" in entry_points

    venv = fresh_venv(tmp_path, wheel)
    python = str(venv / "bin" / "python")
    where = run(
        python,
        "-c",
        "import taskq.console, taskq.queues.engine, importlib.metadata as m; "
        "print(taskq.console.__file__, taskq.queues.engine.__file__, m.distribution('taskq').locate_file(''))",
        cwd=tmp_path,
    )
    assert all(path.startswith(str(venv)) for path in where.split()), where

    project = tmp_path / "site"
    project.mkdir()
    env = {**os.environ, "TASKQ_TEST_REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "mysite.settings"}
    env.pop("PYTHONPATH", None)
    run(python, "-m", "django", "startproject", "mysite", project, cwd=tmp_path)
    run(python, "manage.py", "startapp", "shop", cwd=project, env=env)
    with open(project / "mysite" / "settings.py", "a") as settings:
        settings.write("\nimport os\n" + SETTINGS)
    with open(project / "mysite" / "urls.py", "a") as urls:
        urls.write(URLS)
    (project / "shop" / "tasks.py").write_text(SHOP_TASKS)

    run(python, "manage.py", "migrate", "-v", "0", cwd=project, env=env)
    checked = run(python, "manage.py", "check", "--deploy", cwd=project, env=env)
    # Without the ASGI lines of the page the console's pages never go live, and the check says so (taskq.W131)...
    assert [line for line in checked.splitlines() if "(taskq." in line] == [
        "?: (taskq.W131) ASGI_APPLICATION is not set, so the live console's pages cannot connect their WebSocket"
    ]
    with open(project / "mysite" / "settings.py", "a") as settings:
        settings.write(ASGI_SETTING)
    with open(project / "mysite" / "asgi.py", "a") as asgi:
        asgi.write(ASGI)
    checked = run(python, "manage.py", "check", "--deploy", cwd=project, env=env)
    assert not [line for line in checked.splitlines() if "(taskq." in line]  # ... and is content with them
    found = run(python, "manage.py", "findstatic", "taskq/console.css", cwd=project, env=env)
    assert str(venv) in found
    assert "pages ok" in run(python, "manage.py", "shell", "-c", PAGES, cwd=project, env=env)
    commands = run(python, "manage.py", "help", cwd=project, env=env)
    assert "taskworker" in commands and "    tasks\n" in commands

    (project / "tests").mkdir()
    (project / "tests" / "test_discovery.py").write_text(DISCOVERY_TESTS)
    (project / "tests" / "test_shop.py").write_text(SHOP_TESTS.format(venv=venv))
    (project / "pytest.ini").write_text("[pytest]\nDJANGO_SETTINGS_MODULE = mysite.settings\n")
    redis_client.set("left", "by someone")
    pytest = (python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    discovered = run(*pytest, "tests/test_discovery.py", cwd=project, env=env)
    assert "1 passed" in discovered, discovered
    tested = run(*pytest, "tests/test_shop.py", cwd=project, env=env)
    assert "3 passed" in tested, tested
    assert redis_client.dbsize() == 0  # the fixtures flushed the test database, before and after
