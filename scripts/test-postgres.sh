#!/usr/bin/env bash
# The tests that use the Django database, again on PostgreSQL (issue 26): `make test` runs them on SQLite, and a
# real deployment (docker-compose's included) keeps queue definitions, policies, the audit log, API tokens,
# periodic entries and the History rollups in PostgreSQL. `.ci/run` calls it after `make test`; run it by hand the
# same way (it makes sure a PostgreSQL answers, as `make test` does for Redis):
#
#   bash scripts/test-postgres.sh [pytest args]
#
# TEST_POSTGRES_URL names the server and the database the test database's name is made from (pytest-django
# creates test_<name>, and drops it at the end): default postgres://postgres@127.0.0.1:5432/taskq, a local server
# with trust authentication, as CI's. TEST_REDIS_URL is the Redis database of the first of its two pytest-xdist
# processes (the second takes the one below it), db 7 by default, so a run next to `make test` (dbs 9 and 8) does
# not flush its data. VENV picks the virtual environment (default .venv, set up as
# `make test` does).
#
# What runs: the folders of the Django side (admin, definitions and policies, the audit log, API tokens, the HTTP
# API, periodic entries, the console pages, the CLI's audited commands, the RQ bridge, workflows pages, the live
# console's sockets), the Django integration tests, the tests of what only PostgreSQL does differently
# (tests/postgres), the History page and one rollup written by the Spark job. Of those, only the tests that use
# the database (tests/postgres/database_tests_only.py).
set -euo pipefail

cd "$(dirname "$0")/.."

TEST_POSTGRES_URL=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/taskq}
TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/7}
VENV=${VENV:-.venv}

if [[ $VENV == .venv ]]; then
    make --no-print-directory venv
fi
bash scripts/ensure-redis.sh "$TEST_REDIS_URL"
bash scripts/ensure-postgres.sh "$TEST_POSTGRES_URL"
bash scripts/ensure-java.sh  # the one Spark test: the rollups the analytics job writes into the database

PATHS=(
    tests/policies
    tests/console
    tests/api
    tests/scheduler
    tests/cli
    tests/rq
    tests/workflows
    tests/live/test_live_channels.py
    tests/test_integration_django.py
    tests/test_console_smoke.py
    tests/testing/test_eager_django.py
    tests/postgres
    tests/spark/test_history_page.py
    tests/spark/test_pipeline.py::test_rollups_have_the_known_answers_and_a_rerun_replaces_only_its_day
)

DATABASE_URL=$TEST_POSTGRES_URL TEST_REDIS_URL=$TEST_REDIS_URL REDIS_URL=$TEST_REDIS_URL \
    exec "$VENV/bin/python" -m pytest -p tests.postgres.database_tests_only -n 2 --dist loadgroup "${PATHS[@]}" "$@"
