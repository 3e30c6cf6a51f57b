"""Every benchmark under bench/ runs here at a tiny size (issue 28: benches that cannot rot).

A bench is run by hand and its figures go to bench/RESULTS.md, so nothing else notices when a schema or an API
change breaks it: ``bench/pipeline.py`` failed for weeks on a column the export had gained. Each smoke run starts
the bench as a subprocess, as a person would, on this test's Redis database (``BENCH_REDIS_URL``; under xdist the
worker's own, tests/xdist_isolation.py), and checks only that it ran and reported its figures: exit status 0 and
the keys or table it prints. The figures themselves are never asserted (a tiny run on a busy machine measures
nothing). ``test_every_bench_file_has_a_smoke_run`` fails when a file is added to bench/ with no smoke run here.

The peers' libraries (Dramatiq, Huey, Celery, taskiq, streaq, SAQ) live in a venv of their own and BullMQ in a folder
of its own, both made by scripts/ensure-bench-peers.sh (bench/README.md). On a developer's machine a peer whose
library neither this interpreter nor ``$BENCH_PEERS_PYTHON`` can import (or BullMQ, missing from
``$BENCH_BULLMQ_DIR``) is skipped, saying how to install it; in CI (``CI=true``, where `make test` runs that script
first) the same run fails instead, naming what is missing, so that no peer's bench can rot unseen. RQ is a test
dependency, so its peer (and with it the harness every peer shares) always runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.ports import free_port, given_ports

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PEERS_PYTHON = os.environ.get("BENCH_PEERS_PYTHON", "/tmp/bench-peers-venv/bin/python")
#: Set by pytest and pytest-xdist in this process; a bench that runs pytest itself (chaos_figures) must not see
#: them, or its pytest would take itself for an xdist worker and move to another database.
PYTEST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")

#: Modules of bench/ that are not run on their own: the smoke runs that import them exercise them.
LIBRARIES = {
    "__init__.py": "the package",
    "common.py": "every bench",
    "measure.py": "taskq_bench and the peers' harness (run.py's smoke run)",
    "noop_tasks.py": "the handlers of the worker that taskq_bench starts (run.py's and run_work.py's smoke runs)",
    "work.py": "the handlers' workloads (run_work.py's smoke run)",
    "ws_client.py": "live_sockets.py's WebSockets",
    "peers/__init__.py": "the package",
    "peers/aio.py": "the asyncio peers' workloads (run_ceiling's smoke runs of taskiq, streaq and SAQ)",
    "peers/harness.py": "every peer's workloads (run.py's smoke run, with RQ)",
    "peers/stamp.py": "the peers' latency handler (run.py's smoke run, with RQ)",
}


@dataclass(frozen=True)
class Smoke:
    """One bench at a tiny size: its argv after the interpreter, the bench files it runs, and what its output must
    hold (``check`` gets stdout and the run's folder, and raises AssertionError)."""

    name: str
    argv: list[str]
    covers: tuple[str, ...]
    check: Callable[[str, Path], None]
    needs: tuple[str, ...] = ()  # Python modules the run imports besides the project's (a peer's library)
    ports: int = 0  # free ports to append as --port
    requires: Path | None = None  # a path that must exist, else the run is skipped (a peer outside Python)
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 110.0  # seconds the run may take
    exits: tuple[int, ...] = (0,)  # exit statuses of a run that went through (a soak's failed verdict is 1)


def last_json(stdout: str) -> dict[str, Any]:
    """The last JSON document a bench printed (on one line, or indented over several)."""
    lines = stdout.rstrip().splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if lines[start].startswith("{"):
            try:
                return dict(json.loads("\n".join(lines[start:])))
            except ValueError:
                continue
    raise AssertionError(f"no JSON document in the output:\n{stdout[-3000:]}")


def has_keys(*paths: str) -> Callable[[str, Path], None]:
    """A check that the last JSON document has every dotted path (``analytics.events_per_s``)."""

    def check(stdout: str, _: Path) -> None:
        doc = last_json(stdout)
        for path in paths:
            node: Any = doc
            for key in path.split("."):
                assert isinstance(node, dict) and key in node, f"{path} missing from {json.dumps(doc)[:2000]}"
                node = node[key]

    return check


def prints(*texts: str) -> Callable[[str, Path], None]:
    def check(stdout: str, _: Path) -> None:
        for text in texts:
            assert text in stdout, f"{text!r} not in the output:\n{stdout[-3000:]}"

    return check


def soak_wrote(stdout: str, folder: Path) -> None:
    """The soak's check: it judged every verdict and wrote its samples, report and chart (a run of seconds
    judges nothing: its verdicts are not asserted)."""
    report = last_json(stdout)
    assert set(report["verdicts"]) == {"growth", "logs", "pages", "memory", "chart", "traffic"}, report["verdicts"]
    assert report["pages"]["pages"] == 5 and report["chart"]["ok"], report
    header = (folder / "soak" / "samples.csv").read_text().splitlines()[0].split(",")
    assert {"worker_rss", "console_rss", "redis_used_memory", "worker_fds", "redis_clients"} <= set(header), header
    assert (folder / "soak" / "soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def results_hold(*rows: str) -> Callable[[str, Path], None]:
    """run.py's check: the JSON it wrote has a result, without error, for every ``workload|row``."""

    def check(stdout: str, folder: Path) -> None:
        doc = json.loads((folder / "results" / "latest.json").read_text())
        for row in rows:
            runs = doc["results"].get(row)
            assert runs and all("error" not in run for run in runs), f"{row}: {runs}"
        assert "| library |" in stdout

    return check


TASKQ_ROWS = [f"{w}|taskq" for w in ("enqueue", "enqueue_4threads", "bulk1000", "bulk10000", "memory")] + [
    f"{w}|{row}" for w in ("process", "latency") for row in ("taskq", "taskq-async")
]
RQ_ROWS = [f"{w}|rq" for w in ("enqueue", "bulk1000", "process", "latency", "memory")] + [
    "process|rq-fork",
    "latency|rq-fork",
]
#: run_ceiling at a tiny size: one round of 200 tasks at concurrency 4 (the JSON goes to the test's folder).
TINY_CEILING = ["-m", "bench.run_ceiling", "--rounds", "1", "-n", "200", "--concurrency", "4"]
BULLMQ_MODULES = Path(os.environ.get("BENCH_BULLMQ_DIR", "/tmp/bench-bullmq")) / "node_modules" / "bullmq"
TINY_RUN = ["bench/run.py", "--rounds", "1", "--scale", "0.0005", "--samples", "3", "--sweep", "", "--quiet", "0"]

SMOKES = [
    Smoke(
        "pipeline",
        ["bench/pipeline.py", "--events", "3000", "--exporter-events", "1000", "--driver-memory", "512m"],
        ("pipeline.py",),
        has_keys("exporter.events_per_s", "analytics.events_per_s", "analytics.seconds", "analytics.rollup_rows"),
    ),
    Smoke(
        "taskq_bench-process-async",
        ["-m", "bench.taskq_bench", "process", "-n", "300", "--concurrency", "8", "--work", "incr", "--async"]
        + ["--worker-arg=--pool", "--worker-arg=asyncio"],
        ("taskq_bench.py",),
        has_keys("tasks_per_s", "cpu_cores.worker", "worker_cpu_us_per_task", "redis_cpu_us_per_task"),
    ),
    Smoke(
        "taskq_bench-process-tracing",
        ["-m", "bench.taskq_bench", "process", "-n", "300", "--concurrency", "8", "--work", "incr", "--tracing", "sdk"],
        ("taskq_bench.py", "tracing_sdk.py"),
        has_keys("tasks_per_s", "tracing", "worker_cpu_us_per_task"),
    ),
    Smoke(
        "run-taskq-rq",
        [*TINY_RUN, "--only", "taskq,rq", "--peers-python", sys.executable],
        ("run.py", "taskq_bench.py", "peers/__main__.py", "peers/rq_peer.py"),
        results_hold(*TASKQ_ROWS, *RQ_ROWS),
        needs=("rq",),
    ),
    *[
        Smoke(
            f"run-{peer}",
            [*TINY_RUN, "--only", peer, "--peers-python", "<peers>"],
            (f"peers/{peer}_peer.py",),
            results_hold(f"enqueue|{peer}", f"process|{peer}", f"latency|{peer}", f"memory|{peer}"),
            needs=(peer,),
        )
        for peer in ("dramatiq", "huey", "celery")
    ],
    Smoke(
        "run_ceiling",
        [
            *TINY_CEILING,
            *("--only", "ceiling", "--only", "taskq", "--only", "ceiling-async", "--only", "taskq-async"),
            *("--only", "taskq-async-threads"),
        ],
        ("run_ceiling.py", "ceiling.py"),
        prints(
            "| 4 | ceiling |",
            "| 4 | **taskq** |",
            "| 4 | ceiling-async |",
            "| 4 | **taskq-async** |",
            "| 4 | **taskq-async-threads** |",
        ),
        env={"BENCH_PEERS_PYTHON": "/nonexistent"},
    ),
    *[
        Smoke(
            f"run_ceiling-{peer}",
            [*TINY_CEILING, "--only", peer, "--peers-python", "<peers>"],
            (f"peers/{peer}_peer.py",),
            prints(f"| 4 | {peer}"),
            needs=(module,),
        )
        for peer, module in (("taskiq", "taskiq_redis"), ("streaq", "streaq"), ("saq", "saq"))
    ],
    Smoke(
        "run_ceiling-bullmq",
        [*TINY_CEILING, "--only", "bullmq", "--peers-python", sys.executable],
        ("peers/bullmq_peer.py",),
        prints("| 4 | bullmq"),
        requires=BULLMQ_MODULES,
    ),
    Smoke(
        "run_work",
        # W2 at concurrency 64 is W2 at 10 again with another number: left out for time
        [
            "-m",
            "bench.run_work",
            "--rounds",
            "1",
            "--scale",
            "0.002",
            "--peers-python",
            "/nonexistent",
            "--only",
            "W1",
            "--only",
            "W2 one INCR c10",
            "--only",
            "W3",
            "--only",
            "W4",
        ],
        ("run_work.py",),
        prints("| W1 no-op c10 | taskq |", "| W4 cpu 4 ms c10 | taskq --processes 2 |"),
    ),
    *[
        Smoke(
            f"redis_cost-{mode}",
            ["-m", "bench.redis_cost", mode, "-n", n],
            ("redis_cost.py",),
            has_keys(key),
        )
        for mode, n, key in (
            ("live", "50", "redis_cpu_usec_per_task"),
            ("bulk", "200", "command_usec_per_task"),
            ("transitions", "1000", "life_usec_batched"),
            ("failures", "10", "error_group_bytes_each"),
        )
    ],
    Smoke(
        "redis_life",
        ["-m", "bench.redis_life", "--rounds", "1", "-n", "60", "--batch", "20"],
        ("redis_life.py",),
        has_keys("summary.taskq / bullmq, 1 per call.median_cpu_ratio", "summary.taskq, 20 per call"),
        requires=BULLMQ_MODULES,
    ),
    Smoke(
        "asynq_side_by_side",
        ["-m", "bench.asynq_side_by_side", "-n", "100", "--rounds", "1", "--concurrency", "4"],
        ("asynq_side_by_side.py",),
        has_keys("rounds", "n"),
    ),
    Smoke(
        "tracing_enqueue",
        ["-m", "bench.tracing_enqueue", "-n", "20", "--rounds", "2"],
        ("tracing_enqueue.py",),
        has_keys("span_cpu_us", "inside_over_outside"),
    ),
    Smoke(
        "ab_trees",
        [
            "-m",
            "bench.ab_trees",
            "--old",
            ".",
            "--new",
            ".",
            "--rounds",
            "1",
            "--field",
            "tasks_per_s",
            "--",
            "bench.taskq_bench",
            "enqueue",
            "-n",
            "20",
        ],  # fmt: skip
        ("ab_trees.py",),
        has_keys("summary.tasks_per_s.new_over_old"),
    ),
    Smoke(
        "chaos_figures",
        ["bench/chaos_figures.py", "--scale", "0.05", "-k", "poison"],
        ("chaos_figures.py",),
        prints("| scenario | runs |", "poison"),
    ),
    Smoke(
        "console_scale",
        [
            "bench/console_scale.py",
            "--redis-url",
            "<redis>",
            "--pending",
            "30",
            "--archived",
            "10",
            "--queues",
            "3",
            "--repeat",
            "1",
            "--export-batch",
            "20",
            "--markdown",
        ],  # fmt: skip
        ("console_scale.py",),
        prints(
            "| page | median | p95 |",
            " ms |",
            "| task detail, retried (creation exported) |",
            "| task detail, in a group |",
        ),
    ),
    Smoke(
        "tracing_modes",
        # Every mode (OpenTelemetry absent, API only, an SDK, an SDK in a request span), each in its own process.
        ["-m", "bench.tracing_modes", "--rounds", "1", "-n", "50"],
        ("tracing_modes.py",),
        prints("| round | off /s, CPU µs | api /s, CPU µs |", '"mode": "request"', '"span_us"'),
    ),
    Smoke(
        "live_dashboard",
        ["bench/live_dashboard.py", "--queues", "3", "--tasks", "2", "--repeat", "2"],
        ("live_dashboard.py",),
        prints("| 3 |", "KiB |"),
    ),
    Smoke(
        "live_latency",
        ["bench/live_latency.py", "--rate", "30", "--seconds", "1", "--redis", "<redis>"],
        ("live_latency.py",),
        has_keys("transitions_per_second", "probes_seen", "latency_ms.p99"),
        ports=1,
    ),
    Smoke(
        "live_sockets",
        ["bench/live_sockets.py", "--sockets", "4", "--rate", "30", "--seconds", "1", "--redis", "<redis>"],
        ("live_sockets.py",),
        has_keys("latency_ms.p99", "console_cpu_percent_of_one_core", "console_redis_connections"),
        ports=1,
    ),
    Smoke(
        "api_long_poll",
        # More consumers than places, so the 429 path runs too
        ["bench/api_long_poll.py", "--consumers", "12", "--tasks", "30", "--max-waiters", "4", "--redis", "<redis>"],
        ("api_long_poll.py",),
        has_keys("consumes", "refused_429", "errors", "lost", "tasks_per_s", "console_redis_connections_max"),
        ports=1,
    ),
    Smoke(
        "soak",
        # A soak of seconds on the test's database, its chart drawn by the peers' venv's matplotlib.
        [
            "bench/soak.py",
            "--seconds",
            "10",
            "--pages",
            "5",
            "--retention",
            "2",
            "--redis",
            "<redis>",
            "--chart-python",
            "<peers>",
        ],  # fmt: skip
        ("soak.py", "soak_pages.py", "soak_tasks.py", "soak_chart.py"),
        soak_wrote,
        needs=("matplotlib",),
        ports=1,
        exits=(0, 1),
        timeout=180.0,  # starts five processes and waits out a retention: 60-90 s on a busy machine
    ),
    Smoke(
        "metrics_scrape",
        ["bench/metrics_scrape.py", "--queues", "2", "--tasks", "5", "--rounds", "2"],
        ("metrics_scrape.py",),
        prints("/metrics with 2 queues", "p95"),
    ),
]


def interpreter(needs: tuple[str, ...]) -> str | None:
    """This interpreter when it can import ``needs``, else the peers' venv's when that can, else None."""
    for python in (sys.executable, PEERS_PYTHON):
        if not needs or (
            Path(python).exists()
            and subprocess.run([python, "-c", "; ".join(f"import {m}" for m in needs)], capture_output=True).returncode
            == 0
        ):
            return python
    return None


def in_ci() -> bool:
    """True under CI (.ci/run sets CI=true), where a peer must be there rather than skipped."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def missing(what: str) -> NoReturn:
    """Skip a smoke run whose peer is not installed here, or fail it under CI, saying which and how to install."""
    how = 'eval "$(bash scripts/ensure-bench-peers.sh)" installs them (bench/README.md)'
    if in_ci():
        pytest.fail(f"{what}, and CI must run every bench's smoke run: {how}", pytrace=False)
    pytest.skip(f"{what}: {how}")


def bench_files() -> list[str]:
    return sorted(p.relative_to(BENCH).as_posix() for p in BENCH.rglob("*.py"))


def test_every_bench_file_has_a_smoke_run() -> None:
    covered = {name for smoke in SMOKES for name in smoke.covers}
    missing = [name for name in bench_files() if name not in covered and name not in LIBRARIES]
    assert not missing, (
        f"bench files with no smoke run: {missing}. Add a tiny run of each to SMOKES in {Path(__file__).name} "
        "(or, for a module that is only imported, name who runs it in LIBRARIES)"
    )
    scripts = [name for name in LIBRARIES if "__main__" in (BENCH / name).read_text()]
    assert not scripts, f"{scripts} can be run on their own: give them a smoke run rather than a LIBRARIES entry"
    assert not sorted(covered - set(bench_files())), "SMOKES names files that bench/ no longer has"


@pytest.mark.parametrize("smoke", SMOKES, ids=[smoke.name for smoke in SMOKES])
def test_bench_runs_at_a_tiny_size(smoke: Smoke, redis_client: Any, redis_url: str, tmp_path: Path) -> None:
    peers_python = interpreter(smoke.needs)
    if peers_python is None:
        missing(
            f"{', '.join(smoke.needs)} not installed here nor in the peers' venv ({PEERS_PYTHON}, $BENCH_PEERS_PYTHON)"
        )
    if smoke.requires is not None and not smoke.requires.exists():
        missing(f"{smoke.requires} is missing ($BENCH_BULLMQ_DIR)")
    argv = [peers_python if arg == "<peers>" else redis_url if arg == "<redis>" else arg for arg in smoke.argv]
    if argv[0] == "bench/soak.py":
        argv += ["--out", str(tmp_path / "soak")]
    if argv[0] == "bench/run.py" or argv[:2] in (["-m", "bench.run_work"], ["-m", "bench.run_ceiling"]):
        argv += ["--results-dir", str(tmp_path / "results")]
    for _ in range(smoke.ports):
        argv += ["--port", str(free_port(given_ports()))]
    env = {name: value for name, value in os.environ.items() if name not in PYTEST_VARIABLES}
    env |= {
        "BENCH_REDIS_URL": redis_url,
        "REDIS_URL": redis_url,
        "TEST_REDIS_URL": redis_url,
        "BENCH_LOG_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        **smoke.env,
    }
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=smoke.timeout, check=False
    )
    assert done.returncode in smoke.exits, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    smoke.check(done.stdout, tmp_path)
