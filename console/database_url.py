"""Turn a ``DATABASE_URL`` into a Django ``DATABASES`` entry.

Supported forms (the dj-database-url conventions, without the dependency):

- ``sqlite:////abs/path/db.sqlite3`` (four slashes: absolute path), ``sqlite:///db.sqlite3`` (relative to the
  working directory), ``sqlite://`` or ``sqlite://:memory:`` (in-memory).
- ``postgres://user:pass@host:port/name`` and ``postgresql://...``. User and password are percent-decoded; a
  percent-encoded host such as ``%2Fvar%2Frun%2Fpostgresql`` is a Unix socket directory. Query parameters
  become ``OPTIONS`` (e.g. ``?sslmode=require``), except ``conn_max_age`` which becomes ``CONN_MAX_AGE``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

POSTGRES_SCHEMES = ("postgres", "postgresql")


class DatabaseURLError(ValueError):
    """The URL cannot be turned into a database configuration."""


def parse_database_url(url: str) -> dict[str, Any]:
    """Parse ``url`` into a dict suitable for ``settings.DATABASES["default"]``.

    Raises:
        DatabaseURLError: unknown scheme, missing database name or a malformed port.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        return _sqlite(url.strip())
    if scheme in POSTGRES_SCHEMES:
        return _postgres(parts)
    raise DatabaseURLError(
        f"unsupported DATABASE_URL scheme {parts.scheme!r}; use sqlite:///path or postgres://user:pass@host:port/name"
    )


def _sqlite(url: str) -> dict[str, Any]:
    # Take the path textually: urlsplit would treat the first segment of "sqlite:////abs" oddly, and
    # ":memory:" is not a valid netloc.
    rest = url[len("sqlite://") :]
    if rest in ("", "/", ":memory:", "/:memory:"):
        name = ":memory:"
    else:
        # "sqlite:///rel.db" -> "/rel.db" -> "rel.db"; "sqlite:////abs.db" -> "//abs.db" -> "/abs.db".
        name = unquote(rest[1:]) if rest.startswith("/") else unquote(rest)
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": name}


def _postgres(parts: Any) -> dict[str, Any]:
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise DatabaseURLError("DATABASE_URL for postgres needs a database name: postgres://user:pass@host:port/name")
    try:
        port = parts.port
    except ValueError:
        raise DatabaseURLError(f"DATABASE_URL has an invalid port in {parts.netloc!r}") from None
    config: dict[str, Any] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(port) if port is not None else "",
    }
    options = dict(parse_qsl(parts.query))
    if "conn_max_age" in options:
        raw = options.pop("conn_max_age")
        try:
            config["CONN_MAX_AGE"] = int(raw)
        except ValueError:
            raise DatabaseURLError(f"conn_max_age must be an integer number of seconds, got {raw!r}") from None
    if options:
        config["OPTIONS"] = options
    return config
