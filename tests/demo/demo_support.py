"""Starting and stopping scripts/run-demo.sh as `make run` does, for the tests that run the whole demo."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def start_demo(env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """run-demo.sh in a session of its own (so Ctrl-C can be played as SIGTERM to its group), its output in
    ``log_path``."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            ["bash", "scripts/run-demo.sh"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def interrupt_demo(demo: subprocess.Popen, log_path: Path) -> None:
    """Ctrl-C: SIGTERM to the whole group, as a terminal sends SIGINT; SIGKILL after a minute. Prints the log
    without the task lines, for a failing test's report."""
    os.killpg(demo.pid, signal.SIGTERM)
    try:
        demo.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
    print("\n".join(line for line in log_path.read_text().splitlines() if "task " not in line))


def wait_for_the_group_to_exit(demo: subprocess.Popen) -> None:
    def group_gone() -> bool:  # Spark's JVM, a grandchild, exits a moment after the worker that stopped it
        return not subprocess.run(["pgrep", "-g", str(demo.pid)], capture_output=True).stdout

    wait_for(group_gone, timeout=60, what="every process of the demo to exit")
