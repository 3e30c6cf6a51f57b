"""Migrations from an empty PostgreSQL database, as a deployment's first `manage.py migrate` runs them (the
docker-compose console does at every start): every migration applies, the data migrations included (the console's
groups and their permissions), a second run has nothing to do, and no model change lacks its migration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit: CREATE DATABASE refuses a transaction block


def database_url(name: str) -> str:
    """The URL of database ``name`` on the test database's server, as the settings would be given it."""
    config = connection.settings_dict
    host = config["HOST"] or "127.0.0.1"
    host = f"[{host}]" if ":" in host else quote(host, safe="")  # an IPv6 address; a socket directory, encoded
    credentials = quote(config["USER"] or "", safe="")
    if config["PASSWORD"]:
        credentials += ":" + quote(config["PASSWORD"], safe="")
    port = f":{config['PORT']}" if config["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{quote(name, safe='')}"


@pytest.fixture
def empty_database(redis_url: str):
    """A new, empty database next to the test database, dropped after the test; its name starts with the test
    database's, so a run never touches another's."""
    name = f"{connection.settings_dict['NAME']}_fresh"
    quoted = connection.ops.quote_name(name)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quoted}")  # left by a run that was killed
        cursor.execute(f"CREATE DATABASE {quoted}")
    try:
        yield database_url(name)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")


def manage(database: str, redis_url: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "taskq.console.settings",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_migrate_from_empty_then_nothing_is_left_to_migrate_or_make(empty_database, redis_url, redis_client):
    migrated = manage(empty_database, redis_url, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    assert "Applying taskq.0001_initial... OK" in migrated.stdout

    again = manage(empty_database, redis_url, "migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply." in again.stdout, again.stdout + again.stderr

    unapplied = manage(empty_database, redis_url, "showmigrations", "--plan")
    assert unapplied.returncode == 0 and "[ ]" not in unapplied.stdout, unapplied.stdout

    missing = manage(empty_database, redis_url, "makemigrations", "--check", "--dry-run")
    assert missing.returncode == 0, f"a model change has no migration:\n{missing.stdout}{missing.stderr}"

    groups = manage(
        empty_database,
        redis_url,
        "shell",
        "-c",
        "from django.contrib.auth.models import Group; "
        "print(sorted((g.name, p.codename) for g in Group.objects.all() for p in g.permissions.all()))",
    )
    assert groups.returncode == 0, groups.stderr
    assert "('Console viewers', 'view_console')" in groups.stdout
    assert "('Console operators', 'operate_console')" in groups.stdout
