"""Settings come from the environment: the database URL, the env helpers and the defaults a laptop relies on."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from taskq.console.env import env_bool, env_database, env_float, env_int, env_list, env_str

REPO = Path(__file__).resolve().parent.parent
SETTINGS_FILE = REPO / "console" / "settings.py"


# --- DATABASE_URL -----------------------------------------------------------------------------------------
# Parsed by dj-database-url (taskq.console.env.env_database): these are the forms the README promises, and the named
# error a bad URL gives at startup.

SQLITE = {"ENGINE": "django.db.backends.sqlite3"}
POSTGRES = {"ENGINE": "django.db.backends.postgresql"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////abs/dir/db.sqlite3", {**SQLITE, "NAME": "/abs/dir/db.sqlite3"}),
        ("sqlite:///db.sqlite3", {**SQLITE, "NAME": "db.sqlite3"}),
        ("sqlite://", {**SQLITE, "NAME": ":memory:"}),
        ("sqlite://:memory:", {**SQLITE, "NAME": ":memory:"}),
        (
            "postgres://taskq:secret@db.example:5433/taskq",
            {**POSTGRES, "NAME": "taskq", "USER": "taskq", "PASSWORD": "secret", "HOST": "db.example", "PORT": 5433},
        ),
        ("postgresql://u@localhost/app", {**POSTGRES, "NAME": "app", "USER": "u", "PASSWORD": "", "HOST": "localhost"}),
        # Reserved characters in the password must be percent-encoded; they are decoded.
        (
            "postgres://u:p%40ss%3Aw%2Frd@[::1]:5432/app",
            {**POSTGRES, "USER": "u", "PASSWORD": "p@ss:w/rd", "HOST": "::1", "PORT": 5432},
        ),
        # A percent-encoded host is a Unix socket directory.
        ("postgres://u@%2Fvar%2Frun%2Fpostgresql/app", {**POSTGRES, "NAME": "app", "HOST": "/var/run/postgresql"}),
        (
            "postgres://u:p@h/app?sslmode=require&conn_max_age=60",
            {**POSTGRES, "NAME": "app", "CONN_MAX_AGE": 60, "OPTIONS": {"sslmode": "require"}},
        ),
    ],
)
def test_database_url_forms(monkeypatch, url, expected):
    monkeypatch.setenv("TQ_TEST_DATABASE_URL", url)
    config = env_database("TQ_TEST_DATABASE_URL", "sqlite://")
    assert {key: config.get(key) for key in expected} == expected
    if "OPTIONS" not in expected:
        assert "OPTIONS" not in config


def test_database_url_conn_max_age_is_taken_out_of_the_driver_options(monkeypatch):
    # psycopg would refuse an unknown connection option at the first query.
    monkeypatch.setenv("TQ_TEST_DATABASE_URL", "postgres://u@h/app?conn_max_age=600")
    config = env_database("TQ_TEST_DATABASE_URL", "sqlite://")
    assert config["CONN_MAX_AGE"] == 600 and "OPTIONS" not in config


def test_database_url_unset_or_empty_means_the_default(monkeypatch):
    monkeypatch.delenv("TQ_TEST_DATABASE_URL", raising=False)
    assert env_database("TQ_TEST_DATABASE_URL", "sqlite:////tmp/x.db")["NAME"] == "/tmp/x.db"
    monkeypatch.setenv("TQ_TEST_DATABASE_URL", "  ")
    assert env_database("TQ_TEST_DATABASE_URL", "sqlite:////tmp/x.db")["NAME"] == "/tmp/x.db"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:p@h/app", r"DATABASE_URL: mysql:// is not supported, taskq runs on SQLite or PostgreSQL"),
        ("redis://h:6379/0", r"DATABASE_URL: redis:// is not supported"),
        ("postgres://u:p@h", "DATABASE_URL names no database"),
        ("postgres://u:p@h/", "DATABASE_URL names no database"),
        ("postgres://u:p@h:notaport/app", "DATABASE_URL is not a valid URL"),
        ("postgres://u:p@h/app?conn_max_age=soon", "DATABASE_URL: conn_max_age must be a whole number of seconds"),
        ("db.sqlite3", "DATABASE_URL is not a URL"),
    ],
)
def test_a_bad_database_url_fails_the_settings_with_a_named_error(monkeypatch, url, message):
    """The settings module itself fails, naming the variable and the forms to use, before Django opens anything."""
    with pytest.raises(ImproperlyConfigured, match=message) as failed:
        load_settings(monkeypatch, DATABASE_URL=url)
    assert "sqlite:///" in str(failed.value) or "conn_max_age" in str(failed.value)


def test_a_bad_database_url_never_repeats_the_password(monkeypatch):
    with pytest.raises(ImproperlyConfigured) as failed:
        load_settings(monkeypatch, DATABASE_URL="postgres://u:hunter2@h:notaport/app")
    assert "hunter2" not in str(failed.value)


# --- env helpers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "yes", "on", " True "])
def test_env_bool_true(monkeypatch, raw):
    monkeypatch.setenv("TQ_TEST_FLAG", raw)
    assert env_bool("TQ_TEST_FLAG", False) is True


@pytest.mark.parametrize("raw", ["0", "false", "no", "off", "False"])
def test_env_bool_false(monkeypatch, raw):
    monkeypatch.setenv("TQ_TEST_FLAG", raw)
    assert env_bool("TQ_TEST_FLAG", True) is False


def test_env_bool_rejects_garbage(monkeypatch):
    monkeypatch.setenv("TQ_TEST_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="TQ_TEST_FLAG"):
        env_bool("TQ_TEST_FLAG", False)


def test_unset_and_empty_mean_default(monkeypatch):
    monkeypatch.delenv("TQ_TEST_VAR", raising=False)
    assert env_str("TQ_TEST_VAR", "d") == "d"
    assert env_int("TQ_TEST_VAR", 7) == 7
    assert env_float("TQ_TEST_VAR", None) is None
    assert env_bool("TQ_TEST_VAR", True) is True
    assert env_list("TQ_TEST_VAR", ["a"]) == ["a"]
    monkeypatch.setenv("TQ_TEST_VAR", "  ")
    assert env_str("TQ_TEST_VAR", "d") == "d"
    assert env_int("TQ_TEST_VAR", 7) == 7
    assert env_float("TQ_TEST_VAR", 1.5) == 1.5


def test_env_numbers(monkeypatch):
    monkeypatch.setenv("TQ_TEST_VAR", "42")
    assert env_int("TQ_TEST_VAR", 0) == 42
    assert env_float("TQ_TEST_VAR", None) == 42.0
    monkeypatch.setenv("TQ_TEST_VAR", "2.5")
    assert env_float("TQ_TEST_VAR", 0.0) == 2.5
    with pytest.raises(ImproperlyConfigured, match="TQ_TEST_VAR must be an integer"):
        env_int("TQ_TEST_VAR", 0)
    monkeypatch.setenv("TQ_TEST_VAR", "fast")
    with pytest.raises(ImproperlyConfigured, match="TQ_TEST_VAR must be a number"):
        env_float("TQ_TEST_VAR", 1.0)


def test_env_list_strips_and_drops_empty_items(monkeypatch):
    monkeypatch.setenv("TQ_TEST_VAR", " a.example , b.example,,")
    assert env_list("TQ_TEST_VAR", []) == ["a.example", "b.example"]


# --- the settings module itself ---------------------------------------------------------------------------

SETTINGS_ENV = [
    "SECRET_KEY",
    "DEBUG",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "REDIS_URL",
    "TASKS_KEY_PREFIX",
    "TASKS_LEASE_SECONDS",
    "TASKS_HEARTBEAT_SECONDS",
    "TASKS_RECOVERER_SECONDS",
    "TASKS_CLOCK_SKEW_SECONDS",
    "TASKS_FORWARDER_SECONDS",
    "TASKS_JANITOR_SECONDS",
    "TASKS_ARCHIVE_MAX_SIZE",
    "TASKS_ARCHIVE_MAX_AGE_SECONDS",
    "TASKS_EVENT_STREAM_MAXLEN",
    "TASKS_SHUTDOWN_TIMEOUT",
]


def load_settings(monkeypatch, **env: str) -> dict:
    """Execute console/settings.py in a fresh namespace with a controlled environment.

    run_path leaves django.conf.settings (already configured for this test run) untouched.
    """
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


def test_defaults_work_on_a_laptop(monkeypatch):
    s = load_settings(monkeypatch)
    assert s["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]"]
    assert s["DEBUG"] is False
    assert s["REDIS_URL"] == "redis://127.0.0.1:6379/0"
    database = s["DATABASES"]["default"]
    assert (database["ENGINE"], database["NAME"]) == ("django.db.backends.sqlite3", str(REPO / "db.sqlite3"))
    assert s["TASKS_KEY_PREFIX"] == "tq"
    assert s["TASKS_LEASE_SECONDS"] == 30
    assert s["TASKS_HEARTBEAT_SECONDS"] is None
    assert s["TASKS_RECOVERER_SECONDS"] is None
    assert s["TASKS_CLOCK_SKEW_SECONDS"] is None
    assert s["TASKS_FORWARDER_SECONDS"] == 1.0
    assert s["TASKS_JANITOR_SECONDS"] == 8.0
    assert s["TASKS_ARCHIVE_MAX_SIZE"] == 10_000
    assert s["TASKS_ARCHIVE_MAX_AGE_SECONDS"] == 90 * 24 * 3600
    assert s["TASKS_EVENT_STREAM_MAXLEN"] == 100_000
    assert s["TASKS_SHUTDOWN_TIMEOUT"] == 8.0
    assert s["INSTALLED_APPS"][0] == "daphne"
    assert s["RQ_QUEUES"]["default"]["URL"] == s["REDIS_URL"]
    # A read timeout above channels-redis's 5 s wait for messages (see console/channel_layers.py).
    assert s["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"] == [{"address": s["REDIS_URL"], "socket_timeout": 15.0}]


def test_environment_overrides(monkeypatch):
    s = load_settings(
        monkeypatch,
        ALLOWED_HOSTS="console.example, localhost",
        DEBUG="yes",
        REDIS_URL="redis://redis:6379/2",
        DATABASE_URL="postgres://taskq:taskq@postgres:5432/taskq",
        TASKS_HEARTBEAT_SECONDS="5",
        TASKS_ARCHIVE_MAX_SIZE="50",
    )
    assert s["ALLOWED_HOSTS"] == ["console.example", "localhost"]
    assert s["DEBUG"] is True
    assert s["RQ_QUEUES"]["default"]["URL"] == "redis://redis:6379/2"
    assert s["DATABASES"]["default"]["ENGINE"] == "django.db.backends.postgresql"
    assert s["DATABASES"]["default"]["HOST"] == "postgres"
    assert s["TASKS_HEARTBEAT_SECONDS"] == 5.0
    assert s["TASKS_ARCHIVE_MAX_SIZE"] == 50


def test_bad_value_fails_at_startup(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="TASKS_LEASE_SECONDS"):
        load_settings(monkeypatch, TASKS_LEASE_SECONDS="thirty")
