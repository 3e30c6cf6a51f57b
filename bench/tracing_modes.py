"""What tracing costs a producer: one-by-one ``Client.enqueue`` (bench.taskq_bench's ``enqueue`` workload) with
OpenTelemetry absent, with its API and no SDK, and with an SDK recording, each mode in a process of its own, the
modes in turns round after round (only figures of the same minutes compare on a shared machine):

    .venv/bin/python -m bench.tracing_modes --rounds 3 -n 20000

- ``off``: ``opentelemetry`` cannot be imported (as without the ``otel`` extra);
- ``api``: the API, no SDK (OpenTelemetry's no-op tracer provider);
- ``sdk``: the SDK of bench/tracing_sdk.py (a batch span processor to an exporter that drops what it gets: no
  network, the cost is the spans'), and no current span, as in a script or a periodic job;
- ``request``: the same SDK, each enqueue inside a span of its own, as in a traced web request. ``span_us`` is what
  one such span costs alone (measured in the same process), to tell taskq's share from the request's.

Each child prints one JSON document (taskq_bench's row and the mode); the parent prints every row, then a table of
the rates and client CPU per enqueue, and each mode's rate as a share of ``off``'s in the same round. Uses
BENCH_REDIS_URL (DB 4 by default), flushed first. ``--mode`` runs one child's measure in this process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from .common import REPO, emit

MODES = ("off", "api", "sdk", "request")


def set_up(mode: str) -> None:
    """Make this process what ``mode`` says, before taskq is imported."""
    if mode == "off":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # an import of it now fails
        return
    if mode == "api":
        return
    # optional: the SDK, which only these modes use (importing it sets the process's tracer provider)
    from . import tracing_sdk  # noqa: F401


def span_cost_us(n: int = 5000) -> float:
    """µs one empty span costs in this process (the ``request`` mode's own share of each call)."""
    from opentelemetry import trace  # optional: only the request mode gets here

    tracer = trace.get_tracer("bench")
    started = time.perf_counter()
    for _ in range(n):
        with tracer.start_as_current_span("request"):
            pass
    return round((time.perf_counter() - started) / n * 1e6, 1)


def measure(mode: str, n: int) -> dict[str, Any]:
    set_up(mode)
    # cycle: taskq must be imported after set_up ("off" hides OpenTelemetry from it)
    from . import taskq_bench

    if mode != "request":
        return {**taskq_bench.enqueue_one_by_one(n), "mode": mode}
    from opentelemetry import trace  # optional: only the request mode gets here

    tracer = trace.get_tracer("bench")
    plain = taskq_bench.Client.enqueue

    def in_a_request(self: Any, *args: Any, **options: Any) -> Any:
        with tracer.start_as_current_span("request"):
            return plain(self, *args, **options)

    taskq_bench.Client.enqueue = in_a_request  # type: ignore[method-assign]
    return {**taskq_bench.enqueue_one_by_one(n), "mode": mode, "span_us": span_cost_us()}


def child(mode: str, n: int) -> dict[str, Any]:
    """``mode``'s row, measured by a process of its own (its errors go to this one's stderr)."""
    argv = [sys.executable, "-m", "bench.tracing_modes", "--mode", mode, "-n", str(n)]
    out = subprocess.check_output(argv, cwd=REPO, text=True, timeout=900)
    return dict(json.loads(out.strip().splitlines()[-1]))


def table(rows: list[dict[str, Any]], rounds: int) -> str:
    """Per round: each mode's rate and client CPU per enqueue, and each mode's rate as a share of ``off``'s."""
    head = " | ".join(f"{m} /s, CPU µs" for m in MODES)
    lines = [f"| round | {head} | api/off | sdk/off | request/off |", "|---" * 8 + "|"]
    for r in range(rounds):
        got = {row["mode"]: row for row in rows if row["round"] == r + 1}
        figures = [f"{got[m]['tasks_per_s']:,.0f}, {got[m]['client_cpu_us_per_task']:.0f}" for m in MODES]
        shares = [f"{got[m]['tasks_per_s'] / got['off']['tasks_per_s']:.2f}" for m in MODES[1:]]
        lines.append(f"| {r + 1} | " + " | ".join(figures) + " | " + " | ".join(shares) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=20_000, help="tasks per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=MODES, help="measure this mode here (what each child runs)")
    a = parser.parse_args()
    if a.mode:
        emit(measure(a.mode, a.n))
        return
    rows = []
    for r in range(a.rounds):
        for mode in MODES:
            row = {**child(mode, a.n), "round": r + 1}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(table(rows, a.rounds))


if __name__ == "__main__":
    main()
