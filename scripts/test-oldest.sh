#!/usr/bin/env bash
# The oldest end of the versions taskq supports: Python 3.11 and every lower bound of pyproject.toml's dependencies
# (constraints/oldest.txt), with the django-tasks extra (the Tasks framework on Django 5.2) and none of the others.
# `.ci/run` calls it after `make test` (the newest end) and scripts/test-django6.sh; run it by hand the same way:
#
#   TEST_REDIS_URL=redis://127.0.0.1:6379/9 bash scripts/test-oldest.sh [pytest args]
#
# It runs a cross-section of the suite, a few minutes: the engine, the worker, the Django tasks backend, the HTTP
# API, the console's views and metrics. Not the browser, Spark, chaos or benchmark tests (their extras are not
# installed here, and they would not say more about a lower bound). The venv has no spark, rq or postgres extra,
# so the same run proves that the base install's console and worker import none of them, and that the tests of
# those features are the ones left out (OLDEST_IGNORED below, each with its reason).
#
# The venv, .venv-oldest, is the checkout installed in editable mode (`pip install -e '.[django-tasks,test]'`) with
# the oldest constraints; `pip check` must pass in it. It is rebuilt only when this script, pyproject.toml or the
# constraints change (a stamp, as the Makefile keeps one). Python 3.11 is $PYTHON311, else python3.11 on PATH,
# else pyenv's.
set -euo pipefail

cd "$(dirname "$0")/.."

VENV=.venv-oldest
CONSTRAINTS=constraints/oldest.txt
TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/9}

# The folders and modules run, and the test modules in them that need an extra this venv leaves out.
OLDEST_TESTS=(tests/engine tests/worker tests/djtasks tests/api tests/console tests/metrics tests/test_extras.py)
OLDEST_IGNORED=(
    tests/api/test_api_long_poll_load.py        # two hundred consumers at once: minutes of load, nothing of a bound
    tests/api/test_schemathesis.py              # minutes of property-based runs; test_openapi.py fuzzes the API too
    tests/console/test_console_timeline.py      # reads exported Parquet files: pyarrow (spark extra)
    tests/console/test_redaction_every_path.py  # RQ jobs among the paths: django-rq (rq extra)
    tests/worker/test_spark_submit_settings.py  # the spark:submit handler needs pyspark's spark-submit (spark extra)
)

# shellcheck source=scripts/find-python.sh
source scripts/find-python.sh

stamp="$VENV/.installed-$(cat "$0" pyproject.toml "$CONSTRAINTS" | sha256sum | cut -c1-16)"
if [[ ! -f $stamp ]]; then
    rm -rf "$VENV"
    "$(find_python 3.11 test-oldest)" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$CONSTRAINTS" -e '.[django-tasks,test]'
    "$VENV/bin/python" -m pip check --disable-pip-version-check
    touch "$stamp"
fi

ignores=()
for module in "${OLDEST_IGNORED[@]}"; do ignores+=("--ignore=$module"); done

bash scripts/ensure-redis.sh "$TEST_REDIS_URL"
# Two pytest-xdist processes, as `make test` runs the suite (tests/xdist_isolation.py: TEST_REDIS_URL's database and
# the one below it): 2.6 minutes here instead of 4.9 in one process.
TEST_REDIS_URL=$TEST_REDIS_URL REDIS_URL=$TEST_REDIS_URL \
    exec "$VENV/bin/python" -m pytest -p no:cacheprovider -n 2 --dist loadgroup \
    -m "not browser and not spark and not chaos and not slow" "${ignores[@]}" "${OLDEST_TESTS[@]}" "$@"
