"""Typed readers for the environment variables of Django's own settings, used by settings.py (taskq's own are
listed in ``taskq.queues.engine.settings``, which parses both).

Unset and empty variables both mean "use the default", so a compose file can write ``FOO: ""`` to fall back.
A value that is set but cannot be parsed raises ImproperlyConfigured naming the variable, so a typo fails at
startup instead of silently running with a default.
"""

from __future__ import annotations

import os
from typing import Any, overload

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from taskq.queues.engine import extras
from taskq.queues.engine.errors import ValidationError
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.settings import parse_value


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _typed(name: str, kind: str, default: Any) -> Any:
    value = _raw(name)
    if value is None:
        return default
    try:
        return parse_value(name, kind, value)
    except ValidationError as exc:
        raise ImproperlyConfigured(exc.message) from None


def env_str(name: str, default: str) -> str:
    """Return the variable as a string, or ``default`` when unset or empty."""
    return str(_typed(name, "str", default))


def env_int(name: str, default: int) -> int:
    """Return the variable as an int, or ``default`` when unset or empty."""
    return int(_typed(name, "int", default))


@overload
def env_float(name: str, default: float) -> float: ...
@overload
def env_float(name: str, default: None) -> float | None: ...
def env_float(name: str, default: float | None) -> float | None:
    """Return the variable as a float, or ``default`` (which may be None) when unset or empty."""
    value = _typed(name, "float", default)
    return None if value is None else float(value)


def env_bool(name: str, default: bool) -> bool:
    """Return the variable as a bool: 1/true/yes/on or 0/false/no/off, case-insensitive."""
    return bool(_typed(name, "bool", default))


def env_list(name: str, default: list[str]) -> list[str]:
    """Return the variable split on commas, items stripped and empty items dropped."""
    return list(_typed(name, "list", default))


#: The database engines taskq runs and is tested on. dj-database-url knows more (mysql://, oracle://...), but a URL of
#: one of those would fail only at the first query, deep in Django, with a driver we do not install or test.
DATABASE_ENGINES = ("django.db.backends.sqlite3", "django.db.backends.postgresql")
DATABASE_URL_FORMS = "sqlite:///path/to/db.sqlite3 or postgres://user:password@host:5432/name"


def _require_driver(name: str, engine: str) -> None:
    """ImproperlyConfigured naming the postgres extra where PostgreSQL's driver is missing: Django would only say
    "Error loading psycopg2 or psycopg module", and while it sets up the apps, before any system check runs."""
    if engine != "django.db.backends.postgresql" or extras.importable("psycopg2"):
        return
    missing = extras.missing_extra_message("postgres", f"{name} (PostgreSQL)")
    if missing is not None:
        raise ImproperlyConfigured(missing)


def env_database(name: str, default: str) -> dict[str, Any]:
    """Return the variable, a database URL, as a ``DATABASES`` entry (parsed by dj-database-url), or ``default``'s.

    The forms: ``sqlite:////abs/path`` (four slashes: absolute), ``sqlite:///rel/path`` (relative to the working
    directory), ``sqlite://`` and ``sqlite://:memory:`` (in memory); ``postgres://``, ``postgresql://`` or
    ``pgsql://user:password@host:port/name``, with a percent-encoded user, password or host (``%2Fvar%2Frun%2F
    postgresql``: a Unix socket directory). Query parameters become ``OPTIONS`` (``?sslmode=require``), except
    ``conn_max_age`` (seconds), which becomes ``CONN_MAX_AGE``.

    Raises:
        ImproperlyConfigured: naming the variable, for a URL that is malformed, of another database, or without a
            database name. The message never repeats the URL, which may hold a password.
    """
    url = _raw(name) or default
    scheme = url.partition("://")[0] if "://" in url else ""
    if not scheme:
        raise ImproperlyConfigured(f"{name} is not a URL of the form scheme://...: use {DATABASE_URL_FORMS}")
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url))
    except dj_database_url.UnknownSchemeError:
        config = {"ENGINE": None}  # refused below, with the same words as a scheme of another database
    except ValueError:  # dj_database_url.ParseError: a port that is no number, an unbalanced [ of an IPv6 host
        raise ImproperlyConfigured(
            f"{name} is not a valid URL (is the port a number, and are reserved characters in the password "
            f"percent-encoded?): use {DATABASE_URL_FORMS}"
        ) from None
    if config["ENGINE"] not in DATABASE_ENGINES:
        raise ImproperlyConfigured(
            f"{name}: {scheme}:// is not supported, taskq runs on SQLite or PostgreSQL: use {DATABASE_URL_FORMS}"
        )
    if not config.get("NAME"):  # SQLite's empty name is already ":memory:"
        raise ImproperlyConfigured(f"{name} names no database: use {DATABASE_URL_FORMS}")
    _require_driver(name, config["ENGINE"])
    options = config.get("OPTIONS", {})
    if "conn_max_age" in options:
        # dj-database-url leaves it among the driver's options, where psycopg would refuse it at the first connection.
        seconds = options.pop("conn_max_age")
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise ImproperlyConfigured(f"{name}: conn_max_age must be a whole number of seconds, got {shown(seconds)}")
        config["CONN_MAX_AGE"] = seconds
        if not options:
            del config["OPTIONS"]
    return config
