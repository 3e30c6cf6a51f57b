"""``make run`` survives what an operator does to it: scripts/run-demo.sh supervises the console, the worker and
the scheduler each on its own, so stopping the demo's worker from the console leaves the console up (and the worker
is started again, with a line saying so), and restarting the console leaves the worker up. Ctrl-C (SIGTERM to the
group) still stops everything. Run on the test database, a port of its own (``$TASKQ_TEST_PORTS`` when given) and
temporary folders, without Spark: nothing here needs the History page."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from taskq.queues.engine import Inspector
from tests.demo.demo_support import ROOT, interrupt_demo, start_demo, wait_for_the_group_to_exit
from tests.ports import free_port, given_ports
from tests.waiting import wait_for

STARTUP = 120
PASSWORD = "demo-supervision-1"

pytestmark = pytest.mark.slow


class Browser:
    """Just enough of a browser for Django's login and a CSRF-protected form: cookies and the form's token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(self.base + path, timeout=5) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")

    def post_form(self, path: str, form_page: str, fields: dict[str, str]) -> tuple[int, str]:
        """POST ``fields`` to ``path`` with the CSRF token of the form on ``form_page``."""
        _, page = self.get(form_page)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, page[-2000:]
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1), **fields}).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + form_page})
        with self.opener.open(request, timeout=30) as response:
            return response.status, response.read().decode(errors="replace")


def answers(browser: Browser) -> bool:
    try:
        return browser.get("/favicon.ico")[0] == 200
    except OSError:
        return False


def test_stopping_the_worker_from_the_console_leaves_the_console_up_and_the_worker_comes_back(
    redis_url, redis_client, tmp_path
):
    port = free_port(given_ports())
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "demo.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        "REDIS_URL": redis_url,
        "PORT": str(port),
        "PYTHON": sys.executable,
        "TASKS_SHUTDOWN_TIMEOUT": "2",
        "TASKS_HEARTBEAT_SECONDS": "0.5",
        # No Spark: no exporter, no rollups.
        "TASKS_EVENT_EXPORT": "0",
        "TASKS_ANALYTICS_TODAY_SCHEDULE": "",
        "TASKS_ANALYTICS_SCHEDULE": "",
        "DEMO_ANALYTICS_NOW": "0",
        "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "ops", "--email", "ops@example.com"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    log_path = tmp_path / "demo.log"
    demo = start_demo(env, log_path)
    browser = Browser(f"http://127.0.0.1:{port}")
    inspector = Inspector(redis_url)
    try:
        wait_for(lambda: answers(browser), timeout=STARTUP, what="the console")
        [first] = wait_for(inspector.servers, timeout=STARTUP, what="the worker's heartbeat")
        status, _ = browser.post_form(
            "/accounts/login/", "/accounts/login/", {"username": "ops", "password": PASSWORD, "next": "/servers/"}
        )
        assert status == 200

        page = f"/servers/{first.id}/"
        status, body = browser.post_form(f"/servers/{first.id}/stop/", page, {})
        assert status == 200 and "is stopping" in body, body[-3000:]

        # The console keeps answering for at least 30 s after the worker it showed has gone.
        until = time.monotonic() + 30
        while time.monotonic() < until:
            assert answers(browser), log_path.read_text()[-3000:]
            assert demo.poll() is None, log_path.read_text()[-3000:]
            time.sleep(1)
        status, body = browser.get(page)  # the stopped worker's record, not a 404
        assert status == 200 and "stopped gracefully" in body and "stopped by an operator" in body
        assert "run-demo: the worker exited (status 0); starting it again" in log_path.read_text()
        second = wait_for(
            lambda: [s for s in inspector.servers() if s.id != first.id], timeout=STARTUP, what="a new worker"
        )[0]

        # Restarting the console (here: killing it) leaves the worker up; the console comes back too.
        daphne = subprocess.run(["pgrep", "-g", str(demo.pid), "-f", "daphne"], capture_output=True, text=True)
        for pid in daphne.stdout.split():
            os.kill(int(pid), signal.SIGTERM)
        wait_for(lambda: "run-demo: the console exited" in log_path.read_text(), what="the console's exit noticed")
        wait_for(lambda: answers(browser), timeout=STARTUP, what="the console started again")
        assert [s.id for s in inspector.servers()] == [second.id]
    finally:
        inspector.close()
        interrupt_demo(demo, log_path)
    assert demo.returncode == 130  # Ctrl-C's answer: every child stopped first
    wait_for_the_group_to_exit(demo)
