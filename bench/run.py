"""Run every benchmark, taskq's and the peers', and print markdown tables.

    .venv/bin/python bench/run.py                  # everything, 3 rounds (about 15 minutes on 2 cores)
    .venv/bin/python bench/run.py --rounds 1 --quick
    .venv/bin/python bench/run.py --only taskq     # or: --only peers, --only dramatiq,huey
    .venv/bin/python bench/run.py --render bench/results/A.json bench/results/B.json   # one table from saved runs

Run from the repository root with the project's venv. The peers run under their own venv
(``--peers-python``, default $BENCH_PEERS_PYTHON or /tmp/bench-peers-venv/bin/python; see bench/README.md).
Throughput workloads run in rounds, every library once per round, so that noise on a shared machine spreads
over all of them; tables show the median round and the range. Results also go to bench/results/*.json.
Everything happens in Redis DB 4 (BENCH_REDIS_URL), which is flushed between workloads.
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

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_url, connect, cpu_seconds, machine, machine_busy_seconds, redis_pid, wait_quiet  # noqa: E402

PEERS = ["dramatiq", "huey", "celery", "rq", "rq-fork"]
LABELS = {
    "taskq": "**taskq**",
    "taskq-async": "**taskq** (async handler)",
    "dramatiq": "Dramatiq",
    "huey": "Huey",
    "celery": "Celery",
    "rq": "RQ (SimpleWorker)",
    "rq-fork": "RQ (default forking Worker)",
}
TARGETS = {"enqueue": 15_000, "bulk1000": 100_000, "bulk10000": 100_000, "process": 20_000, "p99": 10.0, "memory": 400}


def plan(a: argparse.Namespace) -> list[tuple[str, str, list[str], bool]]:  # noqa: C901 - a flat list of cases
    """(workload, row, argv, repeated) for every measurement to make."""
    q = [sys.executable, "-m", "bench.taskq_bench"]
    scale = a.scale if a.scale is not None else 0.2 if a.quick else 1.0

    def n(x: int, least: int = 10) -> str:
        """``x`` tasks scaled: in thousands from 1,000 up, else as they come (a smoke run's), at least ``least``."""
        count = x * scale
        return str(max(least, int(count) // 1000 * 1000 if count >= 1000 else int(count)))

    jobs: list[tuple[str, str, list[str], bool]] = []
    c = str(a.concurrency)
    want = set(a.only.split(",")) if a.only else None

    def on(row: str) -> bool:
        base = row.split("-")[0] if row.startswith("taskq") else row
        if want is None:
            return True
        return base in want or ("peers" in want and base in PEERS) or ("rq" in want and row == "rq-fork")

    worker = worker_ready()
    for workload in ("enqueue", "enqueue_4threads", "bulk1000", "bulk10000", "process", "latency", "memory"):
        if on("taskq"):
            if workload == "enqueue":
                jobs.append((workload, "taskq", q + ["enqueue", "-n", n(50_000)], True))
            elif workload == "enqueue_4threads":
                jobs.append((workload, "taskq", q + ["enqueue", "-n", n(40_000), "--threads", "4"], True))
            elif workload.startswith("bulk"):
                batch = workload[4:]
                jobs.append((workload, "taskq", q + ["bulk", "-n", n(100_000, int(batch)), "--batch", batch], True))
            elif workload == "process" and worker:
                jobs.append((workload, "taskq", q + ["process", "-n", n(100_000), "--concurrency", c], True))
                jobs.append(
                    (workload, "taskq-async", q + ["process", "-n", n(100_000), "--concurrency", c, "--async"], True)
                )
                for extra in a.sweep:
                    jobs.append(
                        (
                            f"process_c{extra}",
                            "taskq",
                            q + ["process", "-n", n(100_000), "--concurrency", str(extra)],
                            False,
                        )
                    )
            elif workload == "latency" and worker:
                jobs.append(
                    (workload, "taskq", q + ["latency", "--samples", str(a.samples), "--concurrency", c], False)
                )
                jobs.append(
                    (
                        workload,
                        "taskq-async",
                        q + ["latency", "--samples", str(a.samples), "--concurrency", c, "--async"],
                        False,
                    )
                )
            elif workload == "memory":
                jobs.append((workload, "taskq", q + ["memory", "-n", n(100_000)], False))
        for peer in PEERS:
            if not on(peer) or not a.peers_python:
                continue
            p = [a.peers_python, "-m", "bench.peers", peer]
            if workload == "enqueue" and peer != "rq-fork":
                jobs.append((workload, peer, p + ["enqueue", "-n", n(20_000)], True))
            elif workload.startswith("bulk") and peer == "rq":
                batch = workload[4:]
                jobs.append((workload, peer, p + ["bulk", "-n", n(100_000, int(batch)), "--batch", batch], True))
            elif workload == "process":
                size = {"rq": 5_000, "rq-fork": 1_000}.get(peer, 20_000)
                jobs.append((workload, peer, p + ["process", "-n", n(size), "--concurrency", c], True))
            elif workload == "latency":
                jobs.append((workload, peer, p + ["latency", "--samples", str(a.samples), "--concurrency", c], False))
            elif workload == "memory" and peer != "rq-fork":
                jobs.append((workload, peer, p + ["memory", "-n", n(100_000)], False))
    return jobs


def worker_ready() -> bool:
    cmd = REPO / "worker" / "management" / "commands" / "taskworker.py"
    if not cmd.exists():
        return False
    probe = subprocess.run(
        [sys.executable, "manage.py", "taskworker", "--help"], cwd=REPO, capture_output=True, timeout=120
    )
    return probe.returncode == 0


def run_one(argv: list[str], log) -> dict[str, Any]:
    env = dict(os.environ, BENCH_REDIS_URL=bench_url(), PYTHONPATH=str(REPO))
    started = time.time()
    rpid = redis_pid(connect())
    busy0, redis0 = machine_busy_seconds(), cpu_seconds(rpid) if rpid else 0.0
    children0 = os.times().children_user + os.times().children_system
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.time() - started
    ours = (
        os.times().children_user
        + os.times().children_system
        - children0
        + (cpu_seconds(rpid) - redis0 if rpid else 0.0)
    )
    # cores used by everything else on the machine while this measure ran (other users' tests, builds)
    background = round(max(0.0, machine_busy_seconds() - busy0 - ours) / wall, 2) if wall > 0 else 0.0
    log.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}\n")
    log.flush()
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0][:200], "wall": round(wall, 1), "background_during": background}
    result = json.loads(lines[-1])
    result["background_during"] = background
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the throughput workloads")
    parser.add_argument("--quick", action="store_true", help="a fifth of the task counts")
    parser.add_argument("--scale", type=float, default=None, help="multiply the task counts (0.001: a smoke run)")
    parser.add_argument("--results-dir", type=Path, default=BENCH / "results", help="where the JSON goes")
    parser.add_argument("--only", default="", help="comma-separated: taskq, peers, dramatiq, huey, celery, rq")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument(
        "--sweep",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[50, 200],
        help="extra taskq processing runs at these concurrencies (once each)",
    )
    parser.add_argument("--samples", type=int, default=250, help="latency samples")
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.3,
        help="before each measure, wait until other processes use less than this many cores (0: don't wait)",
    )
    parser.add_argument("--quiet-wait", type=float, default=120.0, help="longest wait for quiet, seconds")
    parser.add_argument(
        "--peers-python", default=os.environ.get("BENCH_PEERS_PYTHON", "/tmp/bench-peers-venv/bin/python")
    )
    a = parser.parse_args()
    if a.peers_python and not Path(a.peers_python).exists():
        print(f"note: no peers' venv at {a.peers_python}; peers skipped (see bench/README.md)", file=sys.stderr)
        a.peers_python = ""
    jobs = plan(a)
    results_dir = a.results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = open(results_dir / f"{stamp}.log", "w")
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    repeated = [j for j in jobs if j[3]]
    once = [j for j in jobs if not j[3]]
    schedule = [(r, j) for r in range(a.rounds) for j in repeated] + [(0, j) for j in once]
    info = machine()
    info["redis"] = connect().info("server")["redis_version"]

    def save() -> dict[str, Any]:
        versions = {
            row: runs[0].get("version") for (_, row), runs in results.items() if runs and runs[0].get("version")
        }
        doc = {
            "machine": info,
            "versions": versions,
            "concurrency": a.concurrency,
            "rounds": a.rounds,
            "results": {f"{w}|{row}": runs for (w, row), runs in results.items()},
        }
        for name in (f"{stamp}.json", "latest.json"):
            (results_dir / name).write_text(json.dumps(doc, indent=1))
        return doc

    for i, (r, (workload, row, argv, _)) in enumerate(schedule, 1):
        background = wait_quiet(a.quiet, a.quiet_wait) if a.quiet > 0 else None
        print(
            f"[{i}/{len(schedule)}] round {r + 1}: {row} {workload} (background load {background} cores)",
            file=sys.stderr,
            flush=True,
        )
        result = run_one(argv, log)
        result["background_before"] = background
        if "error" in result:
            print(f"    error: {result['error']}", file=sys.stderr)
        elif result.get("background_during", 0) > NOISY:
            print(f"    disturbed: other processes used {result['background_during']} cores", file=sys.stderr)
        results.setdefault((workload, row), []).append(result)
        doc = save()
    print(render(doc))
    failed = [f"{row} {w}: {r['error']}" for (w, row), runs in results.items() for r in runs if "error" in r]
    if failed:  # after the table: a long run keeps what it measured, and a broken bench still fails
        raise SystemExit("measures that failed (their output is in " + log.name + "):\n" + "\n".join(failed))


def _median(runs: list[dict[str, Any]], field: str) -> tuple[float, float, float] | None:
    values = [r[field] for r in runs if field in r]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


NOISY = 0.35  # cores used by other processes during a measure above which it is not trusted


def _clean(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The runs measured while the machine was otherwise quiet; all runs, marked, when there are none."""
    ok = [r for r in runs if r.get("background_during", 0.0) <= NOISY]
    return (ok, "") if ok else (runs, " ⚠")


def _rate(runs: list[dict[str, Any]] | None) -> str:
    if not runs:
        return "—"
    if all(r.get("unsupported") for r in runs):
        return "no bulk API"
    runs, mark = _clean(runs)
    m = _median(runs, "tasks_per_s")
    if m is None:
        return "error: " + str(runs[0].get("error", "?"))[:40]
    med, lo, hi = m
    return f"{med:,.0f}" + (f" ({lo:,.0f}–{hi:,.0f})" if len(runs) > 1 else "") + mark


def render(doc: dict[str, Any]) -> str:
    res = {tuple(k.split("|")): v for k, v in doc["results"].items()}
    m = doc["machine"]
    out = [
        f"Machine: {m['nproc']} cores, {m['cpu']}, Redis {m['redis']}, Python {m['python']}, {m['date']}. "
        f"Worker concurrency {doc['concurrency']}; throughput: median of {doc['rounds']} rounds (range), "
        f"counting only runs during which other processes used at most {NOISY} cores; "
        "⚠: no such run, figure disturbed.",
        "",
    ]
    rows = ["taskq", "taskq-async", "dramatiq", "huey", "celery", "rq", "rq-fork"]
    out.append(
        "| library | enqueue one by one (tasks/s) | bulk, lists of 1,000 (tasks/s) | bulk, lists of 10,000 "
        "(tasks/s) | processing, 1 worker process (tasks/s) | idle pickup p50 / p99 (ms) | bytes per "
        "pending task: used_memory delta [sum of MEMORY USAGE] |"
    )
    out.append("|---|---|---|---|---|---|---|")
    for row in rows:
        if not any(k[1] == row for k in res):
            continue
        base = "taskq" if row.startswith("taskq") else row
        enq = _rate(res.get(("enqueue", row))) if row == base else ""
        if row == "taskq" and ("enqueue_4threads", row) in res:
            enq += f"; 4 threads: {_rate(res[('enqueue_4threads', row)])}"
        b1 = _rate(res.get(("bulk1000", row))) if row == base else ""
        b10 = _rate(res.get(("bulk10000", row))) if row == base else ""
        if row == base and row not in ("taskq", "rq", "rq-fork"):
            b1 = b10 = "no bulk API"
        if row == "rq-fork":
            enq, b1, b10 = "(as RQ)", "(as RQ)", "(as RQ)"
        proc_runs = res.get(("process", row))
        proc = _rate(proc_runs)
        if proc_runs and "concurrency" in proc_runs[0]:
            proc += f" [c={proc_runs[0]['concurrency']}]"
        lat_runs, lat_mark = _clean(res.get(("latency", row), [{}]))
        lat = lat_runs[-1]
        latency = (
            f"{lat['p50_ms']:.2f} / {lat['p99_ms']:.2f}{lat_mark}"
            if "p50_ms" in lat
            else ("error" if "error" in lat else "—")
        )
        mem_runs, mem_mark = _clean(res.get(("memory", row), [{}]))
        mem = mem_runs[-1] if row == base else {}
        if "bytes_per_task" in mem:
            memory = f"{mem['bytes_per_task']:.0f}"
            if "keys_bytes_per_task" in mem:
                memory += f" [keys: {mem['keys_bytes_per_task']:.0f}]"
            if "bytes_per_task_without_stream" in mem:
                memory += (
                    f"; without the event stream {mem['bytes_per_task_without_stream']:.0f}"
                    f" [keys: {mem.get('keys_bytes_per_task_without_stream', 0):.0f}]"
                )
            memory += mem_mark
        else:
            memory = "" if row != base else ("(as RQ)" if row == "rq-fork" else "—")
        out.append(f"| {LABELS[row]} | {enq} | {b1} | {b10} | {proc} | {latency} | {memory} |")
    sweep = sorted((int(k[0][9:]), v) for k, v in res.items() if k[0].startswith("process_c"))
    t = TARGETS
    tail = []
    if sweep:
        tail = [
            "",
            "taskq processing at other concurrencies (one run each): "
            + ", ".join(f"c={c}: {_rate(v)} tasks/s" for c, v in sweep),
        ]
    out.append(
        f"| *target for taskq* | ≥ {t['enqueue']:,} | ≥ {t['bulk1000']:,} | ≥ {t['bulk10000']:,} | "
        f"≥ {t['process']:,} | p99 ≤ {t['p99']:.0f} | ≤ {t['memory']} |"
    )
    return "\n".join(out + tail)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--render":
        # several files (e.g. an --only taskq run and an --only peers run) are merged into one table
        docs = [json.loads(Path(name).read_text()) for name in sys.argv[2:]]
        merged = docs[0]
        for other in docs[1:]:
            merged["results"].update(other["results"])
            merged["versions"].update(other.get("versions", {}))
        print(render(merged))
    else:
        main()
