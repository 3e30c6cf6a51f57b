"""The figures of docs/reliability.md: runs the chaos suite (tests/chaos) with its task counts multiplied, collects
what each scenario counted (enqueued, completed, lost, duplicated, recovery time ...) and prints one Markdown table:
counts summed over the rounds, times as the median (and range).

The tests assert correctness; this script only reports. The Redis-kill tests use throwaway redis-servers of their
own (ports 6391-6394); the partition and poison tests use the bench database (``BENCH_REDIS_URL``, DB 4 by
default), flushed by the tests.

    .venv/bin/python bench/chaos_figures.py [--scale 5] [--rounds 1] [-k poison]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_url

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = [
    "enqueued",
    "completed",
    "lost",
    "duplicated",
    "recovery_s",
    "archived_after_s",
    "crashes",
    "stopped_on_lease_expiry",
    "stale_acks_refused",
    "acks_abandoned",
    "acknowledged_in_window",
    "held_at_cut",
    "run_by_slow_host",
    "drain_s",
]


def run_suite(scale: float, selection: str | None, figures: Path) -> int:
    url = bench_url()
    env = {
        **os.environ,
        "CHAOS_SCALE": str(scale),
        "CHAOS_FIGURES": str(figures),
        "TEST_REDIS_URL": url,
        "REDIS_URL": url,
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/chaos",
        "-m",
        "chaos",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "timeout=900",
    ]
    if selection:
        command += ["-k", selection]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def cell(values: list[float], column: str) -> str:
    """Counts are summed over the rounds; times (``*_s``) show the median and, over several rounds, the range."""
    if not values:
        return ""
    if not column.endswith("_s"):
        return f"{sum(values):g}"
    middle = f"{statistics.median(values):.2f}"
    return middle if len(values) == 1 else f"{middle} ({min(values):.2f}-{max(values):.2f})"


def table(rows: list[dict]) -> str:
    used = [c for c in COLUMNS if any(c in row for row in rows)]
    scenarios = list(dict.fromkeys(row["scenario"] for row in rows))
    lines = ["| scenario | runs | " + " | ".join(used) + " |", "|---|---|" + "---|" * len(used)]
    for scenario in scenarios:
        mine = [row for row in rows if row["scenario"] == scenario]
        cells = [cell([row[c] for row in mine if c in row], c) for c in used]
        lines.append(f"| {scenario} | {len(mine)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=5.0, help="multiply every scenario's task count")
    parser.add_argument("--rounds", type=int, default=1, help="run the suite this many times")
    parser.add_argument("-k", dest="selection", help="only the tests matching this pytest -k expression")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = Path(folder) / "figures.jsonl"
        for _ in range(args.rounds):
            if run_suite(args.scale, args.selection, figures) != 0:
                raise SystemExit("the chaos suite failed: the figures would not mean anything")
        rows = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    print(f"\nchaos figures, task counts x{args.scale:g}, {args.rounds} round(s):\n")
    print(table(rows))


if __name__ == "__main__":
    main()
