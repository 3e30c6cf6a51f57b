"""The live dashboard's snapshot at scale: what one round of the hub costs with many queues.

Fills a Redis database (BENCH_REDIS_URL, db 4 unless told otherwise; 0 and 10-15 are refused) with ``--queues``
queues of ``--tasks`` pending tasks each (``--scheduled``: scheduled for an hour later, so no latency grows and
quiet rows stay the same between rounds), then times ``Inspector.queue_infos`` alone (the page's own read) and
the whole snapshot (``console/live/dashboard.py``: that read, the chart, the formatted cells), and reports the
size of a full snapshot and of the delta after one enqueue. The database is flushed before and after.

    BENCH_REDIS_URL=redis://127.0.0.1:6379/4 .venv/bin/python bench/live_dashboard.py --queues 100 500

Run by hand, with results reported in bench/RESULTS.md ("Live console"); no test times anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_url, connect, flush  # noqa: E402


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median and p95 of ``fn``'s wall time, in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, round(0.95 * repeat) - 1)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--tasks", type=int, default=20, help="pending tasks per queue (default 20)")
    parser.add_argument("--scheduled", action="store_true", help="schedule the tasks an hour ahead")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    url = bench_url()
    os.environ["DJANGO_SETTINGS_MODULE"] = "taskq.console.settings"
    os.environ["REDIS_URL"] = url
    import django

    django.setup()
    from taskq import Client
    from taskq.console.live.dashboard import DashboardDelta, dashboard_snapshot
    from taskq.queues import conf

    conn, client = connect(url), Client(url)
    print("| queues | queue_infos (median / p95) | snapshot (median / p95) | full message | delta after one enqueue |")
    print("|---:|---:|---:|---:|---:|")
    try:
        for count in args.queues:
            flush(conn)
            for i in range(count):
                client.enqueue_many(
                    [("bench:t", {"n": n}) for n in range(args.tasks)],
                    queue=f"q{i:04d}",
                    **({"process_in": 3600} if args.scheduled else {}),
                )
            insp = conf.get_inspector()
            infos = timed(lambda insp=insp: insp.queue_infos(insp.queues()), args.repeat)
            snap = timed(lambda insp=insp: dashboard_snapshot(insp), args.repeat)
            delta = DashboardDelta()
            full = delta(dashboard_snapshot(insp))
            client.enqueue("bench:t", {}, queue="q0000")
            after = delta(dashboard_snapshot(insp)) or {}
            print(
                f"| {count} | {infos[0]:.0f} / {infos[1]:.0f} ms | {snap[0]:.0f} / {snap[1]:.0f} ms "
                f"| {len(json.dumps(full)) / 1024:.0f} KiB | {len(json.dumps(after)) / 1024:.0f} KiB |"
            )
    finally:
        flush(conn)
        client.close()


if __name__ == "__main__":
    main()
