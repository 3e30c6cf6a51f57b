"""Building taskq's wheel as a user's pip would, from what an sdist holds, and running commands in the venvs and
projects the packaging tests make."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: What the wheel is built from: the sdist's content (MANIFEST.in grafts the asset folders).
SOURCES = [
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "taskq",
    "console",
    "queues",
    "worker",
    "metrics",
    "templates",
    "static",
]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def build_wheel(work: Path) -> Path:
    source = work / "src"
    for name in SOURCES:
        if (REPO / name).is_dir():
            # taskq/ links the app folders (taskq/queues -> ../queues): copied as links, as git checks them out.
            shutil.copytree(
                REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "-q", "-w", work / "dist", cwd=work)
    (wheel,) = (work / "dist").glob("taskq-*.whl")
    return wheel
