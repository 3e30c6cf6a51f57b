"""Pipeline throughput: the analytics job on N synthetic exported events (default 10 million), and the exporter
(Redis stream -> Parquet, offsets committed) on a smaller number that a shared Redis can hold.

    python bench/pipeline.py [--events 10000000] [--exporter-events 1000000] [--redis redis://127.0.0.1:6379/2]

Prints events/s and peak memory (RSS high-water mark) of each stage. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from queues.history.event_files import SCHEMA

DAY_MS = 86_400_000
START_MS = 1_763_683_200_000  # 2025-11-21T00:00:00Z


def synthetic_events(directory: Path, n_events: int, chunk_tasks: int = 500_000) -> None:
    """Tasks of three events each (enqueue, start, end: 95 % done, 5 % archived) over one UTC day, 8 queues,
    20 types, written straight as exporter-shaped Parquet (vectorized; not timed)."""
    rng = np.random.default_rng(7)
    tasks = n_events // 3
    folder = directory / "date=2025-11-21"
    folder.mkdir(parents=True)
    for first in range(0, tasks, chunk_tasks):
        n = min(chunk_tasks, tasks - first)
        ids = np.arange(first, first + n)
        enq = START_MS + rng.integers(0, DAY_MS - 120_000, n)
        start = enq + rng.exponential(200, n).astype(np.int64)
        end = start + rng.exponential(1500, n).astype(np.int64)
        failed = rng.random(n) < 0.05
        queue = np.array([f"q{i}" for i in range(8)])[ids % 8]
        ttype = np.array([f"type:{i}" for i in range(20)])[ids % 20]
        tid = np.char.add("t", ids.astype(str))
        at = np.concatenate([enq, start, end])
        cols = {
            "stream_id": np.char.add(np.char.add(at.astype(str), "-"), np.tile(ids % 1000, 3).astype(str)),
            "stream_ms": at,
            "stream_seq": np.tile(ids % 1000, 3),
            "queue": np.tile(queue, 3),
            "task_id": np.tile(tid, 3),
            "type": np.tile(ttype, 3),
            "from_state": np.concatenate([np.full(n, ""), np.full(n, "pending"), np.full(n, "active")]),
            "to_state": np.concatenate(
                [np.full(n, "pending"), np.full(n, "active"), np.where(failed, "archived", "done")]
            ),
            "at_ms": at,
            "worker": np.full(3 * n, "bench"),
            "error": np.full(3 * n, None, dtype=object),
        }
        table = pa.Table.from_pydict({k: pa.array(v) for k, v in cols.items()}, schema=SCHEMA)
        pq.write_table(table, folder / f"bench-{first}.parquet", compression="zstd")


def jvm_peak_rss_mb(spark) -> float:
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench_analytics(n_events: int) -> None:
    from queues.history import rollups
    from queues.sparkconf import SparkSettings, build_session

    with tempfile.TemporaryDirectory() as tmp:
        events, out = Path(tmp) / "events", Path(tmp) / "rollups"
        began = time.perf_counter()
        synthetic_events(events, n_events)
        print(f"generated {n_events:,} events in {time.perf_counter() - began:.1f} s (not timed below)")
        spark = build_session(
            SparkSettings(
                master="local[*]",
                app_name="taskq-bench",
                conf={"spark.ui.enabled": "false", "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"},
            )
        )
        spark.sparkContext.setLogLevel("ERROR")
        began = time.perf_counter()
        rows = rollups.run(spark, str(events), str(out), ["2025-11-21"])
        took = time.perf_counter() - began
        print(
            f"analytics: {n_events:,} events -> {len(rows)} rollup rows in {took:.1f} s = "
            f"{n_events / took:,.0f} events/s; JVM peak RSS {jvm_peak_rss_mb(spark):,.0f} MB, "
            f"Python peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB"
        )
        spark.stop()


def bench_exporter(n_events: int, redis_url: str) -> None:
    from queues.engine import Client
    from queues.engine.broker import Broker
    from worker.event_exporter import EventExporter

    client = Client(redis_url)
    broker = Broker(redis_url)
    broker.conn.flushdb()
    try:
        # Attach first (as a running exporter would have): otherwise the stream is trimmed to its MAXLEN.
        from queues.engine.export_store import ExportStore

        ExportStore(broker).attach("default", 10 * n_events)
        began = time.perf_counter()
        for first in range(0, n_events, 10_000):
            client.enqueue_many([("bench:noop", b"") for _ in range(min(10_000, n_events - first))])
        print(f"enqueued {n_events:,} tasks (one event each) in {time.perf_counter() - began:.1f} s (not timed)")
        with tempfile.TemporaryDirectory() as tmp:
            exporter = EventExporter(broker, tmp, "bench", flush_age=0, batch=50_000)
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            began = time.perf_counter()
            exporter.run_once()
            took = time.perf_counter() - began
            assert exporter.exported == n_events, exporter.exported
            print(
                f"exporter: {n_events:,} events Redis -> Parquet in {took:.1f} s = {n_events / took:,.0f} events/s; "
                f"Python peak RSS {max(rss0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024:,.0f} MB"
            )
    finally:
        broker.conn.flushdb()
        broker.close()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--exporter-events", type=int, default=1_000_000)
    parser.add_argument(
        "--redis",
        default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/2"),
        help="a scratch database: it is flushed",
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    if args.exporter_events:
        bench_exporter(args.exporter_events, args.redis)
    if args.events:
        bench_analytics(args.events)


if __name__ == "__main__":
    main()
