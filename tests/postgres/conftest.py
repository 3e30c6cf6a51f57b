"""The tests of what only PostgreSQL does differently: concurrent writers, transactions around enqueues made on
commit, migrations from an empty database, unique constraints under concurrent jobs. scripts/test-postgres.sh runs
them (CI does, after `make test`); on SQLite, `make test`'s database, they are skipped, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

HERE = Path(__file__).resolve().parent
SKIP_REASON = (
    "needs PostgreSQL (concurrent writing transactions, what other connections see, CREATE DATABASE), which SQLite "
    "does otherwise or not at all: run scripts/test-postgres.sh (docs/contributing.md, Tests)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if connection.vendor == "postgresql":
        return
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))
