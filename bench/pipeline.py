"""Pipeline throughput: the analytics job on N synthetic exported events (default 10 million), and the exporter
(Redis stream -> Parquet, offsets committed) on a smaller number that a shared Redis can hold.

    python bench/pipeline.py [--events 10000000] [--exporter-events 1000000] [--redis redis://127.0.0.1:6379/4]
    python bench/pipeline.py --events 3000 --exporter-events 1000     # the smoke run of tests/bench

Prints events/s and peak memory (RSS high-water mark) of each stage, then one JSON document with the figures on
its last line. Figures go to bench/RESULTS.md. The Redis database (``--redis``, else BENCH_REDIS_URL, DB 4 by
default; DB 0 and 10-15 are refused) is flushed before and after the exporter stage.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import checked_url, cpu_seconds, emit, machine, machine_busy_seconds
from taskq.queues.history.event_files import SCHEMA, write_table

DAY_MS = 86_400_000
START_MS = 1_763_683_200_000  # 2025-11-21T00:00:00Z
#: Events per synthetic file: the exporter's default batch (``EventExporter(batch=...)``; whole tasks of three
#: events, so 49,998), so the job opens about as many files as it would over a real export of the same size.
FILE_EVENTS = 50_000


def exported_table(columns: dict[str, Any], rows: int) -> pa.Table:
    """``columns`` as a table of the export's own schema (``SCHEMA``, imported, never repeated here). A column the
    schema lacks is an error; a column of the schema that the bench does not make (one the export gained since)
    is null, as it is in the files exported before that column existed, which the job must read too."""
    unknown = sorted(set(columns) - set(SCHEMA.names))
    if unknown:
        raise SystemExit(f"bench/pipeline.py makes columns the export schema does not have: {unknown}")
    arrays = [pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(rows, f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def synthetic_events(directory: Path, n_events: int, file_events: int = FILE_EVENTS) -> int:
    """Tasks of three events each (enqueue, start, end: 95 % done, 5 % archived) over one UTC day, 8 queues,
    20 types, written as the exporter writes them (``write_table``: its schema, sort order and row groups), in
    files of ``file_events`` events (vectorized; not timed). The start carries the attempt's lease token and the
    end when its handler started, as the worker's scripts record them. Returns the number of files."""
    rng = np.random.default_rng(7)
    tasks = max(1, n_events // 3)
    chunk_tasks = max(1, file_events // 3)
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
        none = np.full(n, None, dtype=object)
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
            "lease": np.concatenate([none, np.char.add("bench-lease-", ids.astype(str)).astype(object), none]),
            "started_ms": np.concatenate([none, none, start.astype(object)]),
        }
        write_table(exported_table(cols, 3 * n), folder / f"bench-{first:09d}.parquet")
    return -(-tasks // chunk_tasks)


def jvm_pid(spark: Any) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def jvm_peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


#: Spark's task metrics summed per stage in its event log (``--stages``): run time, CPU (ns), GC, bytes.
STAGE_METRICS = {
    "internal.metrics.executorRunTime": ("task_s", 1e-3),
    "internal.metrics.executorCpuTime": ("cpu_s", 1e-9),
    "internal.metrics.jvmGCTime": ("gc_s", 1e-3),
    "internal.metrics.input.bytesRead": ("input_mb", 2**-20),
    "internal.metrics.shuffle.write.bytesWritten": ("shuffle_write_mb", 2**-20),
    "internal.metrics.output.bytesWritten": ("output_mb", 2**-20),
    "internal.metrics.diskBytesSpilled": ("spilled_mb", 2**-20),
}


def stage_times(event_log_dir: Path) -> list[dict[str, Any]]:
    """Every completed stage of the job from Spark's event log: its name, wall time, tasks and summed metrics."""
    stages = []
    for log in sorted(path for path in event_log_dir.rglob("events_*") if path.is_file()):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") != "SparkListenerStageCompleted":
                continue
            info = event["Stage Info"]
            row: dict[str, Any] = {
                "stage": info["Stage ID"],
                "name": info["Stage Name"].split(" at ")[0],
                "tasks": info["Number of Tasks"],
                "wall_s": round((info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000, 2),
            }
            for acc in info.get("Accumulables", []):
                if acc.get("Name") in STAGE_METRICS:
                    name, factor = STAGE_METRICS[acc["Name"]]
                    row[name] = round(float(acc["Value"]) * factor, 2)
            stages.append(row)
    return sorted(stages, key=lambda row: row["stage"])


def bench_analytics(n_events: int, file_events: int, driver_memory: str, stages: bool) -> dict[str, Any]:
    from taskq.queues.history import rollups
    from taskq.queues.sparkconf import SparkSettings, build_session

    with tempfile.TemporaryDirectory() as tmp:
        events, out, event_log = Path(tmp) / "events", Path(tmp) / "rollups", Path(tmp) / "spark-events"
        began = time.perf_counter()
        files = synthetic_events(events, n_events, file_events)
        print(f"generated {n_events:,} events in {files:,} files in {time.perf_counter() - began:.1f} s (not timed)")
        conf = {"spark.ui.enabled": "false", "spark.driver.memory": driver_memory}
        if stages:
            event_log.mkdir()
            conf |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": event_log.as_uri(),
                     "spark.eventLog.compress": "false"}  # fmt: skip
        spark = build_session(SparkSettings(master="local[*]", app_name="taskq-bench", conf=conf))
        spark.sparkContext.setLogLevel("ERROR")
        pid = jvm_pid(spark)
        jvm0, busy0, began = cpu_seconds(pid), machine_busy_seconds(), time.perf_counter()
        rows = rollups.run(spark, str(events), str(out), ["2025-11-21"])
        took = time.perf_counter() - began
        jvm_cpu, busy = cpu_seconds(pid) - jvm0, machine_busy_seconds() - busy0
        figures = {
            "events": n_events,
            "files": files,
            "rollup_rows": len(rows),
            "seconds": round(took, 2),
            "events_per_s": round(n_events / took),
            "jvm_cpu_s": round(jvm_cpu, 1),
            # cores that everything else on the machine kept busy meanwhile (other users' work): what was left
            "other_cores": round(max(0.0, busy - jvm_cpu) / took, 2),
            "jvm_peak_rss_mb": round(jvm_peak_rss_mb(pid)),
            "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        spark.stop()
        if stages:
            figures["stages"] = stage_times(event_log)
    print(
        f"analytics: {n_events:,} events -> {len(rows)} rollup rows in {took:.1f} s = "
        f"{figures['events_per_s']:,} events/s, JVM CPU {jvm_cpu:.1f} s, other processes "
        f"{figures['other_cores']} cores; JVM peak RSS {figures['jvm_peak_rss_mb']:,} MB, "
        f"Python peak RSS {figures['python_peak_rss_mb']:,} MB"
    )
    for row in figures.get("stages", []):
        print("  stage " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "stage") + f" [{row['stage']}]")
    return figures


def bench_exporter(n_events: int, redis_url: str) -> dict[str, Any]:
    from taskq import Client
    from taskq.queues.engine.broker import Broker
    from taskq.queues.engine.export_store import ExportStore
    from taskq.worker.event_exporter import EventExporter

    client = Client(redis_url)
    broker = Broker(redis_url)
    broker.conn.flushdb()
    try:
        # Attach first (as a running exporter would have): otherwise the stream is trimmed to its MAXLEN.
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
            if exporter.exported != n_events:
                raise SystemExit(f"the exporter wrote {exporter.exported:,} events of {n_events:,}")
        peak = max(rss0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
        print(
            f"exporter: {n_events:,} events Redis -> Parquet in {took:.1f} s = {n_events / took:,.0f} events/s; "
            f"Python peak RSS {peak:,.0f} MB"
        )
        return {"events": n_events, "seconds": round(took, 2), "events_per_s": round(n_events / took)}
    finally:
        broker.conn.flushdb()
        broker.close()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="analytics job's events (0: skip it)")
    parser.add_argument("--file-events", type=int, default=FILE_EVENTS, help="events per synthetic Parquet file")
    parser.add_argument("--driver-memory", default="4g", help="the Spark driver's memory (spark.driver.memory)")
    parser.add_argument("--stages", action="store_true", help="print each Spark stage's time (from its event log)")
    parser.add_argument("--exporter-events", type=int, default=1_000_000, help="exporter's events (0: skip it)")
    parser.add_argument("--redis", default=None, help="a scratch database, flushed (default: BENCH_REDIS_URL)")
    args = parser.parse_args()
    result: dict[str, Any] = {"workload": "pipeline", "machine": machine()}
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    if args.exporter_events:
        result["exporter"] = bench_exporter(args.exporter_events, checked_url(args.redis))
    if args.events:
        result["analytics"] = bench_analytics(args.events, args.file_events, args.driver_memory, args.stages)
    emit(result)


if __name__ == "__main__":
    main()
