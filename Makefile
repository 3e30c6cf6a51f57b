# The two commands a newcomer needs: `make run` (the demo) and `make test` (the suite, as CI runs it).
# Everything is installed into .venv; a local redis-server is started when none answers.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Rebuilt only when pyproject.toml or the constraints change, so repeated `make test` skips pip.
STAMP := $(VENV)/.installed
# The exact versions everything is installed at (pyproject.toml has the ranges; docs/installing.md).
CONSTRAINTS := constraints/newest.txt
PYTEST_ARGS ?=
# The suite runs on this many pytest-xdist worker processes, each on its own Redis database (TEST_REDIS_URL's for
# the first, the one below it for the next: 9 and 8 by default; tests/xdist_isolation.py). Most tests wait on
# subprocesses, a browser or daphne, so two overlap well even on two cores. PYTEST_WORKERS=0 runs the tests in
# pytest's own process (for --pdb, or to read one test's output as it runs).
PYTEST_WORKERS ?= 2
# Tests use their own Redis database (1-9, enforced by tests/conftest.py), never the demo's db 0.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/9

.PHONY: venv redis run test lint migrate docs bench

venv: $(STAMP)

$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -c $(CONSTRAINTS) -e '.[all,test,dev]'
	$(BIN)/python -m pip check
	touch $@

redis:
	bash scripts/ensure-redis.sh

migrate: venv
	$(BIN)/python manage.py migrate --noinput

# The demo's settings (demo/settings.py) for migrate and bootstrap_admin too, so they say what the demo's would.
run: export DJANGO_SETTINGS_MODULE := demo.settings
run: venv redis migrate
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py bootstrap_admin
	PYTHON=$(BIN)/python bash scripts/run-demo.sh

# The browser tests need Debian's chromium and chromium-driver: ensure-chromium.sh installs them when missing
# (and fails, rather than letting CI skip them, when it cannot). The benchmarks' smoke runs of the peers need their
# throwaway venv and BullMQ's folder: ensure-bench-peers.sh builds them once, cached outside the clone, and its
# exports point the tests at them (under CI=true a peer's smoke run that cannot find its peer fails). The tracing
# tests' OTLP receiver (Jaeger, built from the Go module proxy) likewise: ensure-otel-receiver.sh builds it once,
# cached, and exports TASKQ_OTEL_RECEIVER (under CI=true the OTLP test fails without it). asynq's own CLI, which the
# module proxy does not serve, is built once from a git repository of asynq by ensure-asynq-cli.sh (TASKQ_ASYNQ_CLI;
# without a source its test skips, naming why).
# REDIS_URL is pointed at the test database too, so anything that reads settings.REDIS_URL (or a worker
# subprocess a test starts) stays off db 0.
test: venv
	bash scripts/ensure-redis.sh '$(TEST_REDIS_URL)'
	bash scripts/ensure-java.sh
	bash scripts/ensure-chromium.sh
	bash scripts/ensure-redis-sentinel.sh
	bash scripts/ensure-promtool.sh
	bash scripts/ensure-netns.sh
	peers=$$(bash scripts/ensure-bench-peers.sh) && eval "$$peers" && \
		receiver=$$(bash scripts/ensure-otel-receiver.sh) && eval "$$receiver" && \
		asynq_cli=$$(bash scripts/ensure-asynq-cli.sh) && eval "$$asynq_cli" && \
		TEST_REDIS_URL='$(TEST_REDIS_URL)' REDIS_URL='$(TEST_REDIS_URL)' $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# ruff (lint and format; no unused noqa, no over-long function), mypy (strict for the engine), import-linter
# (layers, no cycles) and three source rules: no accidental repeat of a module name, no product module over 600
# lines, no taskq setting read by its name or default written twice (tests/test_module_*.py,
# tests/test_settings_one_way.py), as CI runs them.
# A missing tool fails the target with the command that installs it, rather than skipping the check.
LINT_TOOLS := ruff mypy lint-imports

lint: venv
	@for tool in $(LINT_TOOLS); do \
		test -x $(BIN)/$$tool || { echo "make lint: $$tool is not installed; run: $(BIN)/python -m pip install -c $(CONSTRAINTS) -e '.[dev]'" >&2; exit 1; }; \
	done
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_module_names.py tests/test_module_sizes.py tests/test_settings_one_way.py

# The documentation site (docs/, Markdown read by MyST) into build/docs: every warning is an error, so a link to a
# page or heading that does not exist, a page in no toctree or a missing image fails it. Sphinx's linkcheck would
# also fetch every external URL; only internal links are checked, here and in the README (which Sphinx never reads).
# -E reads every page again: an incremental build would not report a link in an unchanged page to a heading that
# was renamed in another.
docs: venv
	@test -x $(BIN)/sphinx-build || { echo "make docs: sphinx is not installed; run: $(BIN)/python -m pip install -c $(CONSTRAINTS) -e '.[dev]'" >&2; exit 1; }
	$(BIN)/sphinx-build -W --keep-going -E -b html docs build/docs
	$(BIN)/python scripts/check_readme_links.py README.md

# The figures of docs/benchmarks.md: taskq against its peers and the CPython ceiling (about an hour; scripts/bench.sh
# says what it installs, outside the repository, and what it runs).
bench: venv
	PYTHON=$(BIN)/python bash scripts/bench.sh
