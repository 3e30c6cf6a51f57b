"""taskq adopted as a Django team would: the wheel, installed with its dependencies into a fresh venv with nothing
else, added to a project of their own by the steps of docs/getting-started.md ("Add taskq to your project").

The project is made by ``django-admin startproject`` and has apps of its own named ``metrics``, ``worker`` and
``console`` and a URL of its own named ``dashboard``: names taskq must not take. On Django 6 with Python 3.12 and on
Django 5.2 with Python 3.11 (with the ``django-tasks`` extra, the backport of ``django.tasks``):

- ``pip check`` is clean, and the base install (a new venv, Django included) weighs at most 200 MB;
- each of taskq's files is loaded under one name (tests/module_identity.py);
- a ``@task`` runs end to end through ``manage.py taskworker``;
- the console, mounted by the docs' two lines, is served by daphne: a page loads with its CSS, and its live socket
  connects and moves a figure. On Django 6 the project serves static files with WhiteNoise after collectstatic
  (DEBUG off); on Django 5.2 it has no WhiteNoise and runs daphne's ``runserver`` (DEBUG on).

Dependencies come from the package index (pip's cache keeps repeated runs quick): the ranges pyproject.toml declares
are what is tested, not our own venv's pins.
"""

from __future__ import annotations

import glob
import inspect
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskq import Client
from tests import module_identity
from tests.browser.browser_support import CHROMEDRIVER, CHROMIUM, open_chromium
from tests.packaging.getting_started import for_project
from tests.packaging.wheels import build_wheel, run
from tests.ports import accepting, free_port
from tests.waiting import wait_for
from tests.worker.worker_support import kill_process

#: The base install's ceiling (issue 36): engine, worker, console, API and metrics, with Django.
BASE_INSTALL_MAX_MB = 200
PASSWORD = "a long password for ops"

#: After the page's blocks: the test's Redis, Django's Tasks on taskq, and the project's own apps and login.
PROJECT_SETTINGS = """
REDIS_URL = os.environ["SHOP_REDIS_URL"]
TASKS = {"default": {"BACKEND": "taskq.tasks_backend.TaskqBackend", "QUEUES": ["default"]}}
INSTALLED_APPS += ["console", "metrics", "worker", "orders"]
LOGIN_URL = "admin:login"
STATIC_ROOT = BASE_DIR / "staticfiles"
METRICS_TOKEN = "the token the shop's Prometheus sends"
"""

#: Django 6: collectstatic, WhiteNoise, DEBUG off, served by daphne. Django 5.2: no WhiteNoise, DEBUG on, daphne's
#: runserver (the page's settings put daphne first) serves static files as Django's does.
SERVED_BY_WHITENOISE = """
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
"""
SERVED_BY_RUNSERVER = """
DEBUG = True
"""

PROJECT_URLS = """
from console.views import dashboard

urlpatterns += [path("", dashboard, name="dashboard")]  # the project's own page named "dashboard"
"""

PROJECT_VIEW = """
from django.http import HttpResponse


def dashboard(request):
    return HttpResponse("the shop's own dashboard")
"""

ORDERS_TASKS = """
try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task()
def add(a, b):
    return a + b
"""

#: Enqueue through Django's Tasks API and wait for the worker's result, as a project's code would.
RUN_A_TASK = """
import time
from orders.tasks import add

result = add.enqueue(2, 3)
deadline = time.monotonic() + 60
while result.status not in ("SUCCESSFUL", "FAILED") and time.monotonic() < deadline:
    time.sleep(0.2)
    result.refresh()
print(result.status, result.return_value if result.status == "SUCCESSFUL" else result.errors)
"""

IDENTITY = """
import django.urls, shop.asgi, orders.tasks, taskq.worker.server
django.urls.get_resolver().url_patterns
print(json.dumps(files_under_two_names()))
"""

CASES = [
    pytest.param("3.12", 6, "", SERVED_BY_WHITENOISE, id="django6-python3.12"),
    pytest.param("3.11", 5, "[django-tasks]", SERVED_BY_RUNSERVER, id="django5.2-python3.11"),
]


def interpreter(version: str) -> str:
    """Python ``version``: this one, or pyenv's (as scripts/test-django6.sh finds 3.12)."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for found in sorted(glob.glob(f"{pyenv}/versions/{version}*/bin/python")):
        return found
    pytest.fail(f"no Python {version}: install it (pyenv install {version})")


def size_mb(path: Path) -> float:
    total = sum(os.lstat(os.path.join(root, name)).st_size for root, _, files in os.walk(path) for name in files)
    return total / 1e6


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    with open_chromium((CHROMIUM, CHROMEDRIVER), tmp_path / "chromium-profile") as driver:
        yield driver


def make_project(python: str, where: Path, serving: str, redis_url: str) -> tuple[Path, dict[str, str]]:
    project = where / "shop"
    project.mkdir()  # Django 5.2's startproject wants the folder made; Django 6 makes it
    run(python, "-m", "django", "startproject", "shop", ".", cwd=project)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(DJANGO_SETTINGS_MODULE="shop.settings", SHOP_REDIS_URL=redis_url, PYTHONUNBUFFERED="1")
    for app in ("console", "metrics", "worker", "orders"):
        # startapp refuses a name that an installed module already has: taskq must have left these free.
        run(python, "manage.py", "startapp", app, cwd=project, env=env)
    (project / "console" / "views.py").write_text(PROJECT_VIEW)
    (project / "orders" / "tasks.py").write_text(ORDERS_TASKS)
    # The page's three blocks, added at the end of the three files as it says, then what this project adds.
    with open(project / "shop" / "settings.py", "a") as settings:
        settings.write("\nimport os\n" + for_project("settings.py", "shop") + PROJECT_SETTINGS + serving)
    with open(project / "shop" / "urls.py", "a") as urls:
        urls.write("\n" + for_project("urls.py", "shop") + PROJECT_URLS)
    with open(project / "shop" / "asgi.py", "a") as asgi:
        asgi.write("\n" + for_project("asgi.py", "shop"))
    return project, env


def start(args: list[str], project: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(600)  # a venv, its packages (from pip's cache after the first run), two servers and a browser
@pytest.mark.parametrize(("version", "django_major", "extra", "serving"), CASES)
def test_taskq_in_a_new_project(
    wheel, tmp_path, browser, redis_url, redis_client, version, django_major, extra, serving
) -> None:
    venv = tmp_path / "venv"
    run(interpreter(version), "-m", "venv", venv, cwd=tmp_path)
    python = str(venv / "bin" / "python")
    pip = (python, "-m", "pip", "--disable-pip-version-check", "-q")
    run(*pip, "install", wheel, cwd=tmp_path)
    base_mb = size_mb(venv)
    print(f"base install on Python {version}: {base_mb:.1f} MB (the whole venv, Django included)")
    assert base_mb <= BASE_INSTALL_MAX_MB
    if extra:
        run(*pip, "install", f"taskq{extra} @ {wheel.as_uri()}", cwd=tmp_path)
    assert "No broken requirements found" in run(python, "-m", "pip", "check", cwd=tmp_path)
    django_version = run(python, "-c", "import django; print(django.VERSION[0])", cwd=tmp_path)
    assert int(django_version) == django_major

    project, env = make_project(python, tmp_path, serving, redis_url)
    run(python, "manage.py", "migrate", "-v", "0", cwd=project, env=env)
    checked = run(python, "manage.py", "check", cwd=project, env=env)
    assert "no issues" in checked, checked
    identity = inspect.getsource(module_identity.files_under_two_names)
    probe = f"import json, os, sys\nimport taskq\nAPPS = {module_identity.APPS!r}\n{identity}\n{IDENTITY}"
    said = run(python, "manage.py", "shell", "-c", probe, cwd=project, env=env)
    assert json.loads([line for line in said.splitlines() if line.startswith("{")][-1]) == {}
    names = "from django.urls import reverse; print(reverse('dashboard'), reverse('taskq:dashboard'))"
    assert "/ /ops/" in run(python, "manage.py", "shell", "-c", names, cwd=project, env=env).splitlines()

    worker = start([python, "manage.py", "taskworker"], project, env, tmp_path / "worker.log")
    try:
        done = run(python, "manage.py", "shell", "-c", RUN_A_TASK, cwd=project, env=env)
        assert "SUCCESSFUL 5" in done.splitlines(), (done, (tmp_path / "worker.log").read_text())
    finally:
        kill_process(worker, term_timeout=15)

    live_console_in_the_project(python, project, env, serving, browser, redis_url, tmp_path)


def live_console_in_the_project(python, project, env, serving, browser, redis_url, tmp_path) -> None:
    from selenium.webdriver.common.by import By

    run(python, "manage.py", "collectstatic", "--noinput", "-v", "0", cwd=project, env=env)
    env = {**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
    run(
        python,
        "manage.py",
        "createsuperuser",
        "--noinput",
        "--username",
        "ops",
        "--email",
        "o@x.org",
        cwd=project,
        env=env,
    )
    port = free_port()
    if serving is SERVED_BY_WHITENOISE:
        args = [str(Path(python).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port), "shop.asgi:application"]
    else:
        args = [python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = start(args, project, env, tmp_path / "server.log")
    try:
        assert accepting(server, port, 60), (tmp_path / "server.log").read_text()
        site = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{site}/") as own:
            assert own.read() == b"the shop's own dashboard"  # the project's page named "dashboard" is its own
        client = Client(redis_url)
        client.enqueue("shop:receipt", {"order": 1}, queue="shop-mail")

        browser.get(f"{site}/ops/")  # to the admin's login (LOGIN_URL), then back
        browser.find_element(By.NAME, "username").send_keys("ops")
        browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        wait_for(lambda: browser.current_url == f"{site}/ops/", what="the console after logging in")

        stylesheets = browser.execute_script(
            "return [...document.querySelectorAll('link[rel=stylesheet]')].map(l => l.href)"
        )
        assert stylesheets and all("/static/taskq/" in href for href in stylesheets), stylesheets
        with urllib.request.urlopen(stylesheets[0]) as css:
            assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
        styled = browser.execute_script("return document.styleSheets[0].cssRules.length")
        assert styled > 0  # the browser loaded and parsed the console's CSS

        wait_for(lambda: browser.execute_script("return window.taskqLive.status") == "live", what="the live socket")
        size = "tr[data-live-for='shop-mail'] [data-live-cell=size]"
        assert browser.find_element(By.CSS_SELECTOR, size).text == "1"
        client.enqueue("shop:receipt", {"order": 2}, queue="shop-mail")
        client.enqueue("shop:receipt", {"order": 3}, queue="shop-mail")
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, size).text == "3", what="the live figure to move")
    finally:
        kill_process(server, term_timeout=15)
