"""What a producer span costs: the client's CPU per one-by-one ``Client.enqueue`` inside a span that an
OpenTelemetry SDK records (each enqueue then makes a ``send`` span and writes its context into the task's headers)
against the same enqueue outside any span (nothing traced), in alternating blocks of one process, so that both
halves see the same machine. Run from the repository root with the project's venv (the SDK comes with the test
extra):

    .venv/bin/python -m bench.tracing_enqueue -n 2000 --rounds 6

The SDK's tracer provider has no span processor: spans are made, recorded and ended, and exporting them (the
application's choice of processor and exporter) is left out. Prints one JSON document on its last line.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from bench.common import bench_url, connect, emit, flush
from taskq.queues.engine import Client

QUEUE = "bench"


def per_enqueue_cpu_us(client: Client, n: int, traced: bool) -> float:
    """The process's CPU per enqueue over ``n`` enqueues, inside a recording span or outside any."""
    start = time.process_time()
    if traced:
        with trace.get_tracer("bench").start_as_current_span("request"):
            for _ in range(n):
                client.enqueue("bench:noop", b"", queue=QUEUE)
    else:
        for _ in range(n):
            client.enqueue("bench:noop", b"", queue=QUEUE)
    return (time.process_time() - start) / n * 1e6


def measure(n: int, rounds: int) -> dict[str, Any]:
    trace.set_tracer_provider(TracerProvider())
    conn = connect()
    flush(conn)
    client = Client(bench_url(), policies=False)
    per_enqueue_cpu_us(client, 500, traced=True)  # the warm-up: connection, scripts, the tracer
    figures: dict[bool, list[float]] = {False: [], True: []}
    for round_no in range(rounds):
        for traced in (False, True) if round_no % 2 == 0 else (True, False):
            figures[traced].append(round(per_enqueue_cpu_us(client, n, traced), 1))
    left = conn.llen(client.broker.keys.queue(QUEUE).pending)
    assert left == 500 + 2 * n * rounds, f"{left} tasks pending"
    flush(conn)
    client.close()
    outside, inside = statistics.median(figures[False]), statistics.median(figures[True])
    return {
        "lib": "taskq",
        "workload": "tracing_enqueue",
        "tasks_per_block": n,
        "rounds": rounds,
        "outside_cpu_us": figures[False],
        "inside_cpu_us": figures[True],
        "outside_cpu_us_median": outside,
        "inside_cpu_us_median": inside,
        "span_cpu_us": round(inside - outside, 1),
        "inside_over_outside": round(inside / outside, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="enqueues per block")
    parser.add_argument("--rounds", type=int, default=6, help="blocks of each kind, alternating")
    args = parser.parse_args()
    emit(measure(args.n, args.rounds))


if __name__ == "__main__":
    main()
