"""The OTLP test without its receiver: skipped on a developer's machine, naming the command that builds it, and
failed under CI, which must run it (`make test` builds the receiver first). pytest itself runs the test here,
pointed at a receiver that does not exist, with and without ``CI=true``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.inner_pytest import inner_pytest_env

ROOT = Path(__file__).resolve().parents[2]


def run_otlp_test(redis_url: str, tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    missing = str(tmp_path / "no-receiver" / "jaeger")
    env = inner_pytest_env(
        ci, TEST_REDIS_URL=redis_url, REDIS_URL=redis_url, TASKQ_OTEL_RECEIVER=missing, PYTHONPATH=str(ROOT)
    )
    argv = ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist"]
    return subprocess.run(
        [sys.executable, *argv, "tests/tracing/test_tracing_otlp_receiver.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )


@pytest.mark.parametrize(
    ("ci", "returncode", "outcome", "says"),
    [
        ("true", 1, "1 error", "CI must run the OTLP test: `eval"),  # the receiver fixture fails it at its setup
        (None, 0, "1 skipped", "builds it (a few minutes, once)"),
    ],
    ids=["ci", "developer"],
)
def test_without_its_receiver_the_otlp_test(
    redis_url: str, tmp_path: Path, ci: str | None, returncode: int, outcome: str, says: str
) -> None:
    done = run_otlp_test(redis_url, tmp_path, ci)
    assert (done.returncode, outcome in done.stdout) == (returncode, True), done.stdout[-3000:] + done.stderr[-2000:]
    assert f"no OTLP receiver: TASKQ_OTEL_RECEIVER is '{tmp_path}/no-receiver/jaeger'" in done.stdout
    assert says in done.stdout and 'eval "$(bash scripts/ensure-otel-receiver.sh)"' in done.stdout
