#!/usr/bin/env bash
# The Django tasks backend tests (tests/djtasks) on Django 6.x and Python 3.12, where the framework is Django's own
# django.tasks, not the django-tasks backport the project's Django 5.2 uses (issue 25). `.ci/run` calls it after
# `make test`; run it by hand the same way:
#
#   TEST_REDIS_URL=redis://127.0.0.1:6379/9 bash scripts/test-django6.sh [pytest args]
#
# It keeps a venv of its own, .venv-django6, with only what those tests import: Django 6, redis, hiredis,
# prometheus-client (the worker's metrics) and pytest with its plugins, at the versions constraints/newest.txt pins
# (on Python 3.12 its Django is 6's newest, on 3.11 5.2's). taskq itself is not installed: the tests and their
# worker run from this checkout, as `make test`'s do, and taskq's pytest plugin is loaded by name. The venv is
# rebuilt only when this script, pyproject.toml or the constraints change (a stamp, as the Makefile keeps one), and
# `pip check` must pass in it. Python 3.12 is $PYTHON312, else python3.12 on PATH, else pyenv's.
set -euo pipefail

cd "$(dirname "$0")/.."

VENV=.venv-django6
CONSTRAINTS=constraints/newest.txt
TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/9}

# shellcheck source=scripts/find-python.sh
source scripts/find-python.sh

stamp="$VENV/.installed-$(cat "$0" pyproject.toml "$CONSTRAINTS" | sha256sum | cut -c1-16)"
if [[ ! -f $stamp ]]; then
    rm -rf "$VENV"
    "$(find_python 3.12 test-django6)" -m venv "$VENV"
    # The same exact versions as `make venv`'s (Django aside, by the file's python_version marker), so the two runs
    # differ only by Django.
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$CONSTRAINTS" \
        django redis hiredis prometheus-client pytest pytest-django pytest-timeout
    "$VENV/bin/python" -c 'import django, sys; sys.exit(django.VERSION[0] < 6)' \
        || { echo "test-django6: $CONSTRAINTS gave Python 3.12 no Django 6" >&2; exit 1; }
    "$VENV/bin/python" -m pip check --disable-pip-version-check
    touch "$stamp"
fi

bash scripts/ensure-redis.sh "$TEST_REDIS_URL"
# Only tests/djtasks and its own conftest (the suite's root conftest imports the console's apps), under the
# smallest settings that run Django tasks (tests/djtasks/settings.py), also for the worker processes it starts.
# taskq's plugin is loaded by module: where `make test` installed the checkout (`pip install -e`), its
# taskq.egg-info in the working directory also offers it as the entry point "taskq", which is blocked so the
# plugin is not registered twice.
TEST_REDIS_URL=$TEST_REDIS_URL REDIS_URL=$TEST_REDIS_URL DJANGO_SETTINGS_MODULE=tests.djtasks.settings \
    exec "$VENV/bin/python" -m pytest tests/djtasks --ds=tests.djtasks.settings --confcutdir=tests/djtasks \
    -p no:taskq -p taskq.worker.testing.pytest_plugin -p no:cacheprovider "$@"
