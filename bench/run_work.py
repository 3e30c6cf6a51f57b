"""The processing workloads W1-W4 of bench/RESULTS.md, for taskq and the peers that run the same handler code
(Dramatiq, Huey, Celery; bench/work.py), in rounds: each round runs every case once, so the machine's drift
spreads over all of them. Prints a markdown table of the medians and writes every run to bench/results/.

    .venv/bin/python -m bench.run_work                     # 3 rounds, everything (about 15 minutes)
    .venv/bin/python -m bench.run_work --rounds 1 --only W2 --only W3

| workload | handlers | concurrency |
|---|---|---|
| W1 | no-op | 10 |
| W2 | one Redis round trip (INCR, module-level redis-py client) | 10 and 64 |
| W3 | ``time.sleep(0.01)`` (taskq also async: ``asyncio.sleep``) | 100 |
| W4 | ~4 ms of pure Python; taskq ``--processes 1`` and ``2``; 2,400 tasks, timed from the 200th completion | 10 |
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import REPO

PEERS = ("dramatiq", "huey", "celery")


def cases(peers_python: str | None, scale: float = 1.0) -> list[tuple[str, str, list[str]]]:
    """(workload, row, argv) of every measurement, with the task counts multiplied by ``scale``."""
    taskq = [sys.executable, "-m", "bench.taskq_bench", "process"]
    out: list[tuple[str, str, list[str]]] = []

    def scaled(n: int) -> str:
        return str(max(10, round(n * scale)))

    def add(workload: str, kind: str, concurrency: int, n: int, taskq_only: bool = False) -> None:
        base = ["-n", scaled(n), "--concurrency", str(concurrency), "--work", kind]
        out.append((workload, "taskq", taskq + base))
        if kind in ("sleep", "incr"):
            out.append((workload, "taskq-async", [*taskq, *base, "--async"]))
        if peers_python and not taskq_only:
            out.extend((workload, peer, [peers_python, "-m", "bench.peers", peer, "process", *base]) for peer in PEERS)

    add("W1 no-op c10", "noop", 10, 30_000)
    add("W2 one INCR c10", "incr", 10, 20_000)
    add("W2 one INCR c64", "incr", 64, 20_000)
    add("W3 sleep 10 ms c100", "sleep", 100, 20_000)
    for processes in (1, 2):
        argv = [
            *taskq,
            "-n",
            scaled(2400),
            "--count-from",  # every process has started by then: start-up is not in the figure
            str(round(200 * min(1.0, scale))),
            "--concurrency",
            "10",
            "--work",
            "cpu",
            "--worker-arg=--processes",
            f"--worker-arg={processes}",
        ]
        out.append(("W4 cpu 4 ms c10", f"taskq --processes {processes}", argv))
    return out


def run_one(argv: list[str]) -> dict[str, Any]:
    # This tree first; a path the caller set stays after it (a throwaway folder of an optional package, say).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-500:]}"}
    return dict(json.loads(lines[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", action="append", default=[], help="workloads whose name starts with this (W1..W4)")
    parser.add_argument(
        "--peers-python", default=os.environ.get("BENCH_PEERS_PYTHON", "/tmp/bench-peers-venv/bin/python")
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the task counts (0.005: a smoke run)")
    parser.add_argument("--results-dir", type=Path, default=REPO / "bench" / "results", help="where the JSON goes")
    args = parser.parse_args()
    peers_python = args.peers_python if Path(args.peers_python).exists() else None
    todo = [c for c in cases(peers_python, args.scale) if not args.only or any(c[0].startswith(o) for o in args.only)]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        for i, (workload, row, argv) in enumerate(todo, 1):
            print(f"[round {r + 1}, {i}/{len(todo)}] {workload}: {row}", file=sys.stderr, flush=True)
            results.setdefault((workload, row), []).append(run_one(argv))
    out_dir = args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"work-{stamp}.json").write_text(
        json.dumps([{"workload": w, "row": row, "runs": runs} for (w, row), runs in results.items()], indent=1)
    )
    print("| workload | library | tasks/s (median) | runs | worker cores | Redis cores |")
    print("|---|---|---|---|---|---|")
    failed = []
    for (workload, row), runs in results.items():
        good = [x for x in runs if "tasks_per_s" in x]
        if len(good) < len(runs):
            failed.append(f"{workload}: {row}")
        if not good:
            print(f"| {workload} | {row} | failed: {runs[0].get('error', '?')[:80]} | | | |")
            continue
        rates = [x["tasks_per_s"] for x in good]
        worker = statistics.median(x["cpu_cores"]["worker"] or 0 for x in good)
        redis_cores = statistics.median(x["cpu_cores"]["redis"] or 0 for x in good)
        shown = ", ".join(f"{v:,.0f}" for v in rates)
        print(
            f"| {workload} | {row} | **{statistics.median(rates):,.0f}** | {shown} | {worker:.2f} | {redis_cores:.2f} |"
        )

    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
