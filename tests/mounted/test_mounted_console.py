"""The console in someone else's project, end to end: tests/mounted/shop is a project written as
docs/getting-started.md ("Add taskq to your project") says, with the console under ops/, no CHANNEL_LAYERS, no
console context processor, no WhiteNoise and no template or static folders of its own. It is served for real by
daphne (``manage.py runserver``, daphne's, as a developer runs a project in DEBUG) and driven by headless Chromium.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from browser_support import Console, open_chromium

from taskq import Client
from tests.console.console_support import PASSWORD
from tests.ports import accepting, free_port, given_ports

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
START_TIMEOUT = 60.0

#: A queue row's size on the dashboard, as live.js keeps it.
MAIL_SIZE = '#queues-table tr[data-live-for="mail"] [data-live-count="size"]'
STYLESHEET_STATUS = "return fetch(document.querySelector('link[rel=stylesheet]').href).then(r => r.status);"


def shop_env(tmp_path: Path, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
        "DJANGO_SETTINGS_MODULE": "shop.settings",
        "SHOP_DATABASE": str(tmp_path / "shop.sqlite3"),
        "REDIS_URL": redis_url,
    }


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=HERE, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


@contextmanager
def runserver(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """``manage.py runserver`` of the shop (daphne's, in DEBUG), stopped at the end; its base URL."""
    port = free_port(given_ports())
    with open(log_path, "ab") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "django", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=HERE,
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        assert accepting(server, port, START_TIMEOUT), log_path.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_the_console_mounted_in_a_project_is_live(tmp_path, chromium, redis_client, redis_url):
    env = shop_env(tmp_path, redis_url)
    manage(env, "migrate", "-v", "0")
    manage(
        env,
        "shell",
        "-c",
        f"from django.contrib.auth.models import User; User.objects.create_superuser('ops', password={PASSWORD!r})",
    )
    producer = Client(redis_url)
    producer.enqueue("shop:receipt", {"order": 1}, queue="mail")

    with runserver(env, tmp_path / "shop.log") as url, open_chromium(chromium, tmp_path / "profile") as browser:
        console = Console(browser, url, "ops", tmp_path)
        console.login("/ops/")
        assert browser.current_url == f"{url}/ops/"
        assert browser.execute_script(STYLESHEET_STATUS) == 200
        assert browser.execute_script("return document.styleSheets[0].cssRules.length") > 0
        assert console.find(MAIL_SIZE).text == "1"
        assert console.find("[data-fleet-summary]")  # the summary bar: the console's own context, no processor
        console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "the live socket")

        producer.enqueue("shop:receipt", {"order": 2}, queue="mail")
        console.wait_for(lambda d: d.find_element("css selector", MAIL_SIZE).text == "2", "the size to move to 2")

        # The keyboard's "g s" goes to the console's servers page, under ops/ as the rest.
        console.find("body").send_keys("g", "s")
        console.wait_for(lambda d: d.current_url == f"{url}/ops/servers/", "g s: the console's servers page")

        console.get("/")
        assert "The shop's own dashboard" in console.text("body")
    producer.close()


def test_collectstatic_gathers_the_consoles_files_from_its_app(tmp_path, redis_url):
    env = {**shop_env(tmp_path, redis_url), "SHOP_STATIC_ROOT": str(tmp_path / "static")}
    manage(env, "collectstatic", "--noinput", "-v", "0")
    assert (tmp_path / "static" / "taskq" / "console.css").is_file()
    assert (tmp_path / "static" / "taskq" / "live.js").is_file()
