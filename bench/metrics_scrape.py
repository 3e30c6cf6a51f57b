"""How long a Prometheus scrape of the console's /metrics takes with many queues (target: 100 queues < 100 ms).

Fills the bench database with N queues holding tasks in every state, then times the whole /metrics view
(Django test client: collector + exposition, no network) R times and prints median and p95.

    .venv/bin/python bench/metrics_scrape.py [--queues 100] [--tasks 200] [--rounds 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_url, connect, flush


def fill(url: str, queues: int, tasks: int) -> None:
    from taskq.queues.engine import Client

    client = Client(url)
    broker = client.broker
    for n in range(queues):
        queue = f"q{n:03d}"
        client.enqueue_many([(f"type{t % 5}", b"{}") for t in range(tasks)], queue=queue)
        client.enqueue_many([("later", b"{}")] * 10, queue=queue, process_in=3600)
        leased = broker.run(broker.transitions.dequeue(queue, 30, 300, "bench", "t:"))
        broker.run(broker.transitions.done(queue, [(t.id, t.token) for t in leased[:10]], "bench"))
        for task in leased[10:20]:
            broker.run(broker.transitions.retry(queue, task.id, task.token, time.time() + 3600, "boom", worker="bench"))
        for task in leased[20:25]:
            broker.run(broker.transitions.archive(queue, task.id, task.token, "dead", worker="bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    url = bench_url()
    flush(connect(url))
    fill(url, args.queues, args.tasks)

    os.environ["REDIS_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "taskq.console.settings")
    import django

    django.setup()
    from django.test import Client as WebClient

    web = WebClient(HTTP_HOST="localhost")
    assert web.get("/metrics").status_code == 200  # warm up: scripts, connections, imports
    times = []
    for _ in range(args.rounds):
        began = time.perf_counter()
        response = web.get("/metrics")
        times.append(time.perf_counter() - began)
        assert response.status_code == 200
    lines = response.content.count(b"\n")
    times.sort()
    p95 = times[int(len(times) * 0.95) - 1]
    print(
        f"/metrics with {args.queues} queues ({lines} lines): median {statistics.median(times) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms over {args.rounds} scrapes"
    )
    flush(connect(url))


if __name__ == "__main__":
    main()
