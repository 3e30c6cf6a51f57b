"""The environment of a pytest that a test runs itself (to see what a run under given variables reports): this
process's, less what pytest and pytest-xdist set in it, which would make the inner pytest take itself for an xdist
worker (and move to another database), and less ``CI``, which the test chooses."""

from __future__ import annotations

import os

#: Set by pytest and pytest-xdist in this process.
PYTEST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")


def inner_pytest_env(ci: str | None, **variables: str) -> dict[str, str]:
    """That environment with ``variables``, and ``CI`` set to ``ci`` (left out for None)."""
    env = {name: value for name, value in os.environ.items() if name not in (*PYTEST_VARIABLES, "CI")}
    env |= variables
    if ci is not None:
        env["CI"] = ci
    return env
