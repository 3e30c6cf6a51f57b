#!/usr/bin/env bash
# The Django tasks backend tests (tests/djtasks) on Django 6.x and Python 3.12, where the framework is Django's own
# django.tasks, not the django-tasks backport the project's Django 5.2 uses (issue 25). `.ci/run` calls it after
# `make test`; run it by hand the same way:
#
#   TEST_REDIS_URL=redis://127.0.0.1:6379/9 bash scripts/test-django6.sh [pytest args]
#
# It keeps a venv of its own, .venv-django6, with only what those tests import: Django 6, redis, hiredis,
# prometheus-client (the worker's metrics) and pytest with its plugins, at the versions pyproject.toml pins (Django
# excepted). taskq itself is not installed: the tests and their worker run from this checkout, as `make test`'s do,
# and taskq's pytest plugin is loaded by name. The venv is rebuilt only when this script or pyproject.toml changes
# (a stamp, as the Makefile keeps one). Python 3.12 is $PYTHON312, else python3.12 on PATH, else pyenv's.
set -euo pipefail

cd "$(dirname "$0")/.."

DJANGO6=${DJANGO6:-django==6.1.3}
VENV=.venv-django6
TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/9}

is_python312() {
    "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1
}

find_python312() {
    local found
    # A pyenv shim named python3.12 is on PATH even where no 3.12 is selected: try each candidate, not its name.
    for found in ${PYTHON312:-} "$(command -v python3.12 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python; do
        if [[ -n $found ]] && is_python312 "$found"; then echo "$found"; return; fi
    done
    echo "test-django6: no Python 3.12 (set PYTHON312, or install it: pyenv install 3.12)" >&2
    exit 1
}

stamp="$VENV/.installed-$(cat "$0" pyproject.toml | sha256sum | cut -c1-16)"
if [[ ! -f $stamp ]]; then
    rm -rf "$VENV"
    "$(find_python312)" -m venv "$VENV"
    # The pins of pyproject.toml for the packages the tests need, so the two runs differ only by Django.
    mapfile -t pins < <("$VENV/bin/python" - <<'EOF'
import re, tomllib

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = {"redis", "hiredis", "prometheus-client", "pytest", "pytest-django", "pytest-timeout"}
for spec in project["dependencies"] + project["optional-dependencies"]["test"]:
    if re.split(r"[=<>\[ ]", spec, maxsplit=1)[0].lower() in wanted:
        print(spec)
EOF
    )
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$DJANGO6" "${pins[@]}"
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
