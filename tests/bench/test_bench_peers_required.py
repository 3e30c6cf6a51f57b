"""A peer's smoke run that cannot find its peer skips on a developer's machine and fails under CI.

On a fresh machine nothing had installed the peers, so their smoke runs used to skip in CI too and their benches
could rot unseen. test_bench_smoke.py now fails them when ``CI`` is set (`make test` builds the peers first with
scripts/ensure-bench-peers.sh). Here pytest itself runs two of those smoke runs, pointed at a peers' venv and a
BullMQ folder that do not exist, with and without ``CI=true``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.inner_pytest import inner_pytest_env

ROOT = Path(__file__).resolve().parents[2]
#: Huey's run goes through the peers' venv, BullMQ's through its npm folder: one of each way to miss a peer.
SMOKES = "run-huey or run_ceiling-bullmq"


def run_smokes(redis_url: str, tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = inner_pytest_env(
        ci,
        TEST_REDIS_URL=redis_url,
        REDIS_URL=redis_url,
        BENCH_PEERS_PYTHON=str(tmp_path / "no-venv" / "bin" / "python"),
        BENCH_BULLMQ_DIR=str(tmp_path / "no-bullmq"),
        PYTHONPATH=str(ROOT),
    )
    argv = ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", "tests/bench/test_bench_smoke.py"]
    return subprocess.run(
        [sys.executable, *argv, "-k", SMOKES], cwd=ROOT, env=env, capture_output=True, text=True, timeout=100
    )


def test_a_missing_peer_fails_the_run_under_ci(redis_url: str, tmp_path: Path) -> None:
    done = run_smokes(redis_url, tmp_path, "true")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 failed" in done.stdout, done.stdout[-3000:]
    assert f"huey not installed here nor in the peers' venv ({tmp_path}/no-venv/bin/python" in done.stdout
    assert f"{tmp_path}/no-bullmq/node_modules/bullmq is missing" in done.stdout
    assert "CI must run every bench's smoke run" in done.stdout
    assert 'eval "$(bash scripts/ensure-bench-peers.sh)"' in done.stdout


def test_a_missing_peer_is_skipped_on_a_developers_machine(redis_url: str, tmp_path: Path) -> None:
    done = run_smokes(redis_url, tmp_path, None)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 skipped" in done.stdout, done.stdout[-3000:]
    assert "huey not installed here" in done.stdout
    assert 'eval "$(bash scripts/ensure-bench-peers.sh)" installs them' in done.stdout
    assert "failed" not in done.stdout
