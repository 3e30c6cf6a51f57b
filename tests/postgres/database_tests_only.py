"""A pytest plugin for the PostgreSQL pass (scripts/test-postgres.sh): of the tests collected, it keeps those that
use the Django database and deselects the rest, which a second run on another database would only repeat.

A test uses the database when it carries pytest-django's ``django_db`` mark or needs its ``db`` or
``transactional_db`` fixture, directly or through another fixture (``admin_client``, ``django_user_model``...).
Browser tests are left out too: they are the slowest and their pages are the ones the console tests render.
Load it with ``-p tests.postgres.database_tests_only``.
"""

from __future__ import annotations

import pytest

DATABASE_FIXTURES = frozenset({"db", "transactional_db"})


def uses_the_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") is not None:
        return True
    return not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, deselected = [], []
    for item in items:
        wanted = uses_the_database(item) and item.get_closest_marker("browser") is None
        (kept if wanted else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    return "PostgreSQL pass: only the tests that use the Django database (tests/postgres/database_tests_only.py)"
