"""taskq's share of the CPython ceiling, with the peers, in one run: for each concurrency, the ceiling of the handler
(``bench.ceiling``: threads or asyncio tasks doing only the handler's work, no queue), taskq's worker draining the
same handler (sync and async), and every peer draining it, in rounds. Each round runs every case once, the order
reversed every other round, so that the machine's drift spreads over all of them and each ceiling is measured next
to the taskq run it is compared with. Prints a markdown table: tasks/s, the share of the ceiling (taskq or peer /
the ceiling of the same round, min / median / max over the rounds) and the machine's busy cores meanwhile.

    .venv/bin/python -m bench.run_ceiling                          # 3 rounds, c=10 and c=64, W2 (one INCR)
    .venv/bin/python -m bench.run_ceiling -n 500 --rounds 1        # a smoke run of a few seconds per case
    .venv/bin/python -m bench.run_ceiling --only ceiling --only taskq --concurrency 64

The handler is ``bench/work.py``'s (``--work``, default ``incr``: one Redis INCR). Sync handlers (taskq, Dramatiq,
Huey, Celery) are compared with the sync ceiling, async ones (taskq async, taskiq, streaq, SAQ) with the async one;
BullMQ runs in Node, which no CPython ceiling bounds, so it has no share. Peers run under ``--peers-python``
(default ``$BENCH_PEERS_PYTHON`` or /tmp/bench-peers-venv/bin/python) and are skipped when it is missing; BullMQ
also needs its throwaway npm folder (bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import REPO, machine, machine_busy_seconds
from .run_work import run_one
from .work import KINDS

# peer -> the ceiling its handlers are compared with (None: not a CPython program)
PEERS: dict[str, str | None] = {
    "dramatiq": "ceiling",
    "huey": "ceiling",
    "celery": "ceiling",
    "taskiq": "ceiling-async",
    "streaq": "ceiling-async",
    "saq": "ceiling-async",
    "bullmq": None,
}


#: Rows run only when ``--only`` names them.
BY_NAME_ONLY = ("taskq-async-threads", "taskq-async-uvloop")


@dataclass(frozen=True)
class Case:
    concurrency: int
    row: str  # ceiling, taskq, ceiling-async, taskq-async or a peer's name
    argv: tuple[str, ...]
    against: str | None  # the row whose figure of the same round this one is divided by


def cases(n: int, concurrencies: list[int], kind: str, peers_python: str | None, only: list[str]) -> list[Case]:
    """Every measurement of one round, in order: per concurrency the ceilings beside taskq's runs, then the peers."""
    me = sys.executable
    out: list[Case] = []
    for c in concurrencies:
        base = ("-n", str(n), "--concurrency", str(c), "--work", kind)
        out += [
            Case(c, "ceiling", (me, "-m", "bench.ceiling", *base), None),
            Case(c, "taskq", (me, "-m", "bench.taskq_bench", "process", *base), "ceiling"),
            Case(c, "ceiling-async", (me, "-m", "bench.ceiling", *base, "--async"), None),
            Case(c, "taskq-async", (me, "-m", "bench.taskq_bench", "process", *base, "--async"), "ceiling-async"),
        ]
        # Asked for by name only: async handlers on the thread pool's loop (the path before the asyncio pool), and
        # the asyncio pool on uvloop (the taskq[uvloop] extra must be importable by the worker).
        async_run = (me, "-m", "bench.taskq_bench", "process", *base, "--async")
        out += [
            Case(c, "taskq-async-threads", (*async_run, "--worker-arg=--pool", "--worker-arg=thread"), "ceiling-async"),
            Case(
                c,
                "taskq-async-uvloop",
                (*async_run, "--worker-arg=--event-loop", "--worker-arg=uvloop"),
                "ceiling-async",
            ),
        ]
        if peers_python:
            out += [
                Case(c, peer, (peers_python, "-m", "bench.peers", peer, "process", *base), against)
                for peer, against in PEERS.items()
            ]
    return [case for case in out if case.row in only or (not only and case.row not in BY_NAME_ONLY)]


def measure(case: Case) -> dict[str, Any]:
    """One run, with the cores the whole machine was busy meanwhile (ours and everyone else's)."""
    busy0, t0 = machine_busy_seconds(), time.monotonic()
    result = run_one(list(case.argv))
    wall = time.monotonic() - t0
    result["machine_busy_cores"] = round((machine_busy_seconds() - busy0) / wall, 2)
    result["wall_s"] = round(wall, 1)  # the whole case: pre-fill, start-up, drain, shutdown
    return result


def spread(values: list[float], fmt: str) -> str:
    """min / median / max of the rounds (one value: itself)."""
    if not values:
        return ""
    if len(values) == 1:
        return format(values[0], fmt)
    return " / ".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))


def table(runs: dict[tuple[int, str], list[dict[str, Any]]], todo: list[Case]) -> list[str]:
    lines = [
        "| c | library | tasks/s, median (min-max) | share of the ceiling, min / median / max"
        " | worker cores | Redis cores | machine busy cores |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    seen: set[tuple[int, str]] = set()
    for case in todo:
        key = (case.concurrency, case.row)
        if key in seen:
            continue
        seen.add(key)
        results = runs.get(key, [])
        good = [r for r in results if "tasks_per_s" in r]
        if not good:
            error = results[0].get("error", "?") if results else "not run"
            lines.append(f"| {case.concurrency} | {case.row} | failed: {error[:100]!r} | | | | |")
            continue
        rates = [r["tasks_per_s"] for r in good]
        shares = []
        if case.against:
            for mine, ceiling in zip(results, runs.get((case.concurrency, case.against), []), strict=False):
                if "tasks_per_s" in mine and "tasks_per_s" in ceiling:
                    shares.append(mine["tasks_per_s"] / ceiling["tasks_per_s"])
        name = f"**{case.row}**" if case.row.startswith("taskq") else case.row
        version = good[0].get("version")
        if version:
            name += f" {version.split(' (')[0].split(',')[0]}"
        worker = statistics.median(r["cpu_cores"].get("worker") or 0 for r in good)
        redis_cores = statistics.median(r["cpu_cores"].get("redis") or 0 for r in good)
        busy = statistics.median(r.get("machine_busy_cores", 0) for r in good)
        rate_text = f"{statistics.median(rates):,.0f}"
        if len(rates) > 1:
            rate_text += f" ({min(rates):,.0f}-{max(rates):,.0f})"
        lines.append(
            f"| {case.concurrency} | {name} | {rate_text} | {spread(shares, '.2f')} | {worker:.2f} | {redis_cores:.2f}"
            f" | {busy:.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-n", type=int, default=20_000, help="tasks per run, and the ceiling's calls (default 20,000)")
    parser.add_argument("--concurrency", type=int, action="append", default=[], help="default: 10 and 64")
    parser.add_argument("--work", choices=KINDS, default="incr")
    parser.add_argument("--only", action="append", default=[], help="rows to run: ceiling, taskq, ..., a peer's name")
    parser.add_argument(
        "--peers-python", default=os.environ.get("BENCH_PEERS_PYTHON", "/tmp/bench-peers-venv/bin/python")
    )
    parser.add_argument("--results-dir", type=Path, default=REPO / "bench" / "results", help="where the JSON goes")
    args = parser.parse_args()
    peers_python = args.peers_python if Path(args.peers_python).exists() else None
    todo = cases(args.n, args.concurrency or [10, 64], args.work, peers_python, args.only)
    runs: dict[tuple[int, str], list[dict[str, Any]]] = {}
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    for r in range(args.rounds):
        order = todo if r % 2 == 0 else todo[::-1]
        for i, case in enumerate(order, 1):
            print(f"[round {r + 1}, {i}/{len(order)}] c={case.concurrency} {case.row}", file=sys.stderr, flush=True)
            runs.setdefault((case.concurrency, case.row), []).append(measure(case))
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())
    out_dir = args.results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "machine": machine(),
        "started": started,
        "finished": finished,
        "n": args.n,
        "work": args.work,
        "runs": [{"concurrency": c, "row": row, "runs": results} for (c, row), results in runs.items()],
    }
    (out_dir / f"ceiling-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(document, indent=1))
    print(f"{args.rounds} rounds, {started} - {finished}, {args.n:,} tasks per run, handler: {args.work}")
    print("\n".join(table(runs, todo)))
    if any("tasks_per_s" not in run for results in runs.values() for run in results):
        sys.exit(1)  # a measure failed (its row says why): a script that runs it must not take it for a figure


if __name__ == "__main__":
    main()
