"""Run one benchmark in two checkouts, alternating, and compare: this machine's speed drifts by 2x from day to
day, so only figures taken in the same minutes compare.

    .venv/bin/python -m bench.ab_trees --old /tmp/tree_old --new . --rounds 3 \\
        --field redis_cpu_usec_per_task --field command_usec_per_task -- bench.redis_cost live -n 5000

Each round runs ``python -m <module> <args>`` in the old tree, then in the new one (from each tree's root, so
each imports its own code), reads the JSON document on the last line of its output, and prints the named fields;
the summary gives each field's median in both trees and new/old. The benchmark module must exist in both trees
(copy it into the old one when it is new).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_in(tree: Path, module_args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", *module_args], cwd=tree, capture_output=True, text=True, timeout=1800, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return dict(json.loads(lines[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--field", action="append", required=True, help="a field of the JSON document to compare")
    parser.add_argument("module_args", nargs=argparse.REMAINDER, help="-- module [args]")
    args = parser.parse_args()
    module_args = [a for a in args.module_args if a != "--"] if args.module_args[:1] == ["--"] else args.module_args
    figures: dict[str, dict[str, list[float]]] = {
        "old": {f: [] for f in args.field},
        "new": {f: [] for f in args.field},
    }
    for round_no in range(1, args.rounds + 1):
        for label, tree in (("old", args.old), ("new", args.new)):
            doc = run_in(tree.resolve(), module_args)
            for f in args.field:
                figures[label][f].append(float(doc[f]))
            print(f"round {round_no} {label}: " + ", ".join(f"{f}={doc[f]}" for f in args.field), flush=True)
    summary = {}
    for f in args.field:
        old, new = statistics.median(figures["old"][f]), statistics.median(figures["new"][f])
        summary[f] = {"old_median": old, "new_median": new, "new_over_old": round(new / old, 3) if old else None}
        ratio = summary[f]["new_over_old"]
        print(f"{f}: old {figures['old'][f]} median {old}; new {figures['new'][f]} median {new}; new/old {ratio}")
    print(json.dumps({"workload": " ".join(module_args), "rounds": args.rounds, "summary": summary}))


if __name__ == "__main__":
    main()
