"""The console served by a real daphne (WebSockets need ASGI; the WSGI live_server of the other browser tests
cannot upgrade a socket), with its own SQLite file, the test Redis and a viewer account (``vera``)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.console.console_support import PASSWORD
from tests.ports import accepting, free_port
from taskq.worker.testing.redis_db import DEFAULT_TEST_REDIS_URL

ROOT = Path(__file__).resolve().parents[2]
USER = "vera"
START_TIMEOUT = 30.0


@dataclass
class DaphneConsole:
    url: str
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def session_cookie(self) -> str:
        """The session id of a fresh login of the viewer, for sockets opened outside the browser."""
        return manage(
            self.env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User; from django.test import Client; "
            f"c = Client(); c.force_login(User.objects.get(username={USER!r})); print(c.cookies['sessionid'].value)",
        ).split()[-1]  # the last line: the shell may print other things first

    def cpu_seconds(self) -> float:
        """User + system CPU the daphne process has used so far (from /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @contextmanager
    def down(self) -> Iterator[None]:
        """The console stopped for the body (a restart, to the pages open on it), then served again on the same
        port from the same database, so the browser's session and its open pages carry on."""
        stop(self.process)
        yield
        self.process = serve(self.env, self.port, self.log_path)


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True)
    return done.stdout.decode()


def add_user(env: dict[str, str], username: str, *codenames: str) -> None:
    """A user of the daphne console's database, with the password of the tests and these permissions."""
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import Permission, User; "
        f"u = User.objects.create_user({username!r}, password={PASSWORD!r}); "
        f"u.user_permissions.add(*Permission.objects.filter(codename__in={list(codenames)!r}))",
    )


def serve(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """daphne serving taskq.console.asgi on ``port``, once it accepts connections (its output appended to the log)."""
    with open(log_path, "ab") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "taskq.console.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
    if not accepting(server, port, START_TIMEOUT):
        stop(server)
        raise RuntimeError(log_path.read_text())
    return server


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=15)


def console_env(database: Path, redis_url: str) -> dict[str, str]:
    """The environment of a console (and of ``manage.py`` on its database): its own SQLite file and ``redis_url``."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
        "REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{database}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
    }


@functools.cache
def viewer_database() -> Path:
    """A console database migrated, with the viewer in it, made once per test process: each console starts from a
    copy of it instead of running ``manage.py migrate`` and a second ``manage.py`` for the user (two Django
    start-ups, 3-7 s on a busy CI machine, for each of a dozen consoles). The migrations write nothing to Redis."""
    home = Path(tempfile.mkdtemp(prefix="taskq-console-db-"))
    atexit.register(shutil.rmtree, home, True)
    database = home / "console.sqlite3"
    env = console_env(database, os.environ.get("REDIS_URL") or DEFAULT_TEST_REDIS_URL)
    manage(env, "migrate", "-v", "0")
    add_user(env, USER, "view_console")
    return database


@contextmanager
def daphne_console(workdir: Path, redis_url: str, port: int | None = None) -> Iterator[DaphneConsole]:
    """daphne serving taskq.console.asgi on ``port`` (one the OS picks without it), stopped at the end."""
    database = workdir / "console.sqlite3"
    shutil.copyfile(viewer_database(), database)
    env = console_env(database, redis_url)
    port = port or free_port()
    log_path = workdir / "daphne.log"
    console = DaphneConsole(f"http://127.0.0.1:{port}", port, env, serve(env, port, log_path), log_path)
    try:
        yield console
    finally:
        stop(console.process)
