"""Console at scale: how long every console page takes to render with one very big queue.

Fills a Redis database (db 1 unless told otherwise; 0 and 10-15 are refused) with ``--pending`` pending and
``--archived`` archived tasks in queue ``big``, plus small queues up to ``--queues`` in all (200), and 24 hours
of minutes and 30 days of hours of time series for every queue, and the big queue's whole history as the event
exporter would have left it (Parquet files of 50,000 events in ``--export-dir``, a fresh temporary folder unless
one is named; a folder that already holds files is used as it is), then renders each console page ``--repeat``
times through Django's test client, in process, and reports the median and p95 of the server-side time per page.
The database is flushed before filling and again at the end (``--keep`` leaves it filled; ``--reuse`` skips
filling a database an earlier ``--keep`` run left).

    .venv/bin/python bench/console_scale.py                        # 1,000,000 pending, 100,000 archived
    .venv/bin/python bench/console_scale.py --pending 100000 --repeat 5

Run by hand, with results reported in bench/RESULTS.md ("Console at scale"); no test times anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "big"
CHUNK = 1000  # tasks per enqueue_many call (the client sends one script call per chunk of 1,000 anyway)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/1", help="database 1-9 (default db 1)")
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--archived", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20, help="renders per page (default 20)")
    parser.add_argument("--keep", action="store_true", help="leave the database filled at the end")
    parser.add_argument("--reuse", action="store_true", help="do not flush and fill: use what --keep left")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--only", default="", help="time only pages whose label contains this text")
    parser.add_argument("--queues", type=int, default=200, help="queues in all, the big one included (default 200)")
    parser.add_argument("--export-dir", default="", help="exported event files (default: a temporary folder)")
    parser.add_argument(
        "--export-batch", type=int, default=50_000, help="events per exported file (default 50,000, the exporter's "
        "batch; a quiet exporter flushes smaller ones every 5 s)",
    )  # fmt: skip
    return parser.parse_args(argv)


def check_database(url: str) -> None:
    import redis

    db = int(redis.connection.parse_url(url).get("db", 0) or 0)
    if not 1 <= db <= 9:
        sys.exit(f"console_scale: refusing database {db}: it flushes the database it fills, so use 1-9 (default 1)")


def setup_django(redis_url: str, workdir: str) -> None:
    """Django on a throwaway SQLite database, the engine on the bench's Redis database."""
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "taskq.console.settings"
    os.environ["REDIS_URL"] = redis_url
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    import warnings

    import django

    # WhiteNoise warns that STATIC_ROOT is missing until collectstatic runs; pages are timed, not assets.
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    setup_test_environment()  # lets the test client's "testserver" host in
    call_command("migrate", verbosity=0, interactive=False)


def fill_series(redis_url: str, queues: list[str]) -> None:
    """24 hours of minutes and 30 days of hours of time series for every queue (and the global series), as busy
    workers would leave them: one type per queue, a few run and wait buckets, the sampled size and latency."""
    import redis

    from taskq import Keys
    from taskq.queues.engine.series import RETENTION, point

    keys, conn, now = Keys(), redis.Redis.from_url(redis_url), time.time()
    began = time.perf_counter()
    for resolution, count in (("m", 24 * 60), ("h", 30 * 24)):
        last = point(now, resolution)
        pipe = conn.pipeline(transaction=False)
        for index in range(last - count + 1, last + 1):
            total: dict[str, int] = {}
            for n, queue in enumerate(queues):
                ok, failed = 50 + (index + n) % 40, (index * 7 + n) % 5
                fields = {"ok|report:build": ok, "fail|report:build": failed, "retry|report:build": failed // 2,
                          "ms|report:build": ok * 12, "r2|report:build": ok // 2, "r3|report:build": ok - ok // 2,
                          "r6|report:build": failed, "w0|report:build": ok, "w3|report:build": failed,
                          "size": 1000 + n, "latency_ms": 200 + (index % 60) * 10}  # fmt: skip
                key = keys.queue(queue).series(resolution, index)
                pipe.hset(key, mapping=fields)
                pipe.expire(key, RETENTION[resolution])
                total[f"ok|{queue}"], total[f"fail|{queue}"] = ok, failed
                total["ok"], total["fail"] = total.get("ok", 0) + ok, total.get("fail", 0) + failed
            pipe.hset(keys.series(resolution, index), mapping=total)
            pipe.expire(keys.series(resolution, index), RETENTION[resolution])
            if len(pipe) > 20_000:
                pipe.execute()
        pipe.execute()
    print(f"filled the time series of {len(queues)} queues in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    conn.close()


def fill(redis_url: str, pending: int, archived: int, queues: int) -> None:
    """``archived`` tasks enqueued then archived in bulk, then ``pending`` more: all through the engine."""
    from taskq import Client, Inspector, Limits

    limits = Limits(archive_max_size=max(archived, 1) * 2)  # the default archive cap would trim them
    client = Client(redis_url, limits=limits)
    inspector = Inspector(redis_url, limits=limits, actor="bench")

    def enqueue(count: int, task_type: str) -> None:
        for start in range(0, count, CHUNK):
            items = [
                (task_type, {"to": f"user{n}@example.com", "n": n}) for n in range(start, min(start + CHUNK, count))
            ]
            client.enqueue_many(items, queue=QUEUE)

    began = time.perf_counter()
    enqueue(archived, "email:bounce")
    if archived:
        moved = inspector.archive_all(QUEUE, "pending")
        assert moved == archived, f"archived {moved} of {archived}"
    later = min(LATER, pending // 10)  # the traffic after the particular tasks: their events lie that deep
    enqueue(pending - later, "email:deliver")
    fill_particular(client, inspector)
    enqueue(later, "email:deliver")
    small = ["critical", "default", "low"] + [f"q{n:03d}" for n in range(max(0, queues - 4))]
    for name in small[: max(0, queues - 1)]:
        client.enqueue_many([("report:build", {"n": n}) for n in range(10)], queue=name)
    fill_series(redis_url, [QUEUE, *small[: max(0, queues - 1)]])
    info = inspector.queue_info(QUEUE)
    print(
        f"filled {QUEUE}: {info.pending:,} pending, {info.archived:,} archived in "
        f"{time.perf_counter() - began:.1f} s; Redis uses {inspector.redis_info()['used_memory_human']}",
        file=sys.stderr,
    )
    client.close()


#: Pending tasks enqueued after the particular tasks (``fill_particular``): what the queue did since their last move.
LATER = 10_000
LONG_HISTORY = "bench-long-history"  # the ids of the particular tasks their pages are found by
IN_GROUP = "bench-in-group"
#: Moves of the long-history task: archived by an operator, run again, so many times.
MOVES = 100


def fill_particular(client, inspector) -> None:
    """The tasks whose pages read the most of the queue's event stream, made before the last ``LATER`` pending
    tasks: one in a group, a workflow (its second member waiting), one that an operator archived and ran again
    ``MOVES`` times, and a retried one (the oldest pending, leased and failed into retry, as a worker would)."""
    from taskq import chain, sig

    client.enqueue("report:part", {"n": 1}, queue=QUEUE, group="nightly", task_id=IN_GROUP)
    client.submit(chain(sig("report:fetch", {"n": 1}), sig("report:render", {"n": 2})), queue=QUEUE)
    client.enqueue("email:deliver", {"to": "long@example.com"}, queue=QUEUE, task_id=LONG_HISTORY)
    for _ in range(MOVES):
        inspector.archive_task(QUEUE, LONG_HISTORY)
        inspector.run_task(QUEUE, LONG_HISTORY)
    broker = client.broker
    (leased,) = broker.run(broker.transitions.dequeue(QUEUE, 1, 60, "bench-worker", "bench-"))
    failed = broker.transitions.retry(
        QUEUE, leased.id, leased.token, time.time() + 3600, "SMTP 451: try later", worker="bench-worker"
    )
    broker.run(failed)


FLUSH_AGE_MS = 5_000  # taskq.worker.event_exporter.EventExporter's flush_age


def fill_exported(redis_url: str, directory: str, per_file: int) -> None:
    """The big queue's history as exported event files: each archived task's creation and archiving, each pending
    task's creation, in batches of ``per_file`` as the exporter writes them. Its stream has trimmed nearly all of
    it, so an old task's page reads these files. Event times run from the oldest task's creation on (the oldest
    pending task's event falls at its real creation time)."""
    import redis

    from taskq import Inspector, Keys
    from taskq.queues.engine.export_store import StreamEntry
    from taskq.queues.history.event_files import write_batch

    began = time.perf_counter()
    conn, keys, inspector = redis.Redis.from_url(redis_url), Keys().queue(QUEUE), Inspector(redis_url)
    archived = [m.decode() for m in conn.zrange(keys.archived, 0, -1)]
    retried = [m.decode() for m in conn.zrange(keys.retry, 0, -1)]  # the oldest pending, before its attempt
    pending = retried + [m.decode() for m in conn.lrange(keys.pending, 0, -1)][::-1]  # oldest (next to run) first
    conn.close()

    def created_ms(task_id: str) -> int:
        created = inspector.get_task(QUEUE, task_id).created_at
        return int(created.timestamp() * 1000) if created else 0

    # The exporter writes a batch of ``per_file`` when that many wait, else whatever came within its 5 s flush
    # age: small files mean events that trickled in, at most ``per_file`` in 5 s. Spaced that way, the oldest
    # pending task's creation keeps its real time.
    first, last = created_ms(pending[0]), created_ms(pending[-1])
    step = max((last - first) / max(1, len(pending) - 1), FLUSH_AGE_MS / per_file)
    at = [first + round((n - 2 * len(archived)) * step) for n in range(2 * len(archived) + len(pending))]
    events = [(at[n], task_id, "email:bounce", "", "pending") for n, task_id in enumerate(archived)]
    events += [
        (at[len(archived) + n], task_id, "email:bounce", "pending", "archived") for n, task_id in enumerate(archived)
    ]
    events += [
        (at[2 * len(archived) + n], task_id, "email:deliver", "", "pending") for n, task_id in enumerate(pending)
    ]
    for start in range(0, len(events), per_file):
        batch = [
            StreamEntry(f"{at}-{start + n}", {"id": task_id, "type": kind, "from": was, "to": now, "at": str(at)})
            for n, (at, task_id, kind, was, now) in enumerate(events[start : start + per_file])
        ]
        write_batch(directory, QUEUE, batch)
    print(f"exported {len(events):,} events of {QUEUE} in {time.perf_counter() - began:.1f} s", file=sys.stderr)


def pages(inspector) -> list[tuple[str, str]]:
    """(label, path) of every console page, at the places a big queue makes expensive."""
    info = inspector.queue_info(QUEUE)
    oldest = inspector.list_tasks(QUEUE, "pending", page=1, size=1)[0].id  # next to run
    newest = inspector.list_tasks(QUEUE, "pending", page=info.pending, size=1)[0].id
    middle_page = max(1, info.pending // 20 // 2)
    last_page = max(1, -(-info.pending // 20))
    behind = min(LATER // 2, info.pending // 20)  # tasks enqueued after it: at full size, half of LATER
    deep = inspector.list_tasks(QUEUE, "pending", page=max(1, info.pending - behind), size=1)[0].id
    middle = inspector.list_tasks(QUEUE, "pending", page=max(1, info.pending // 2), size=1)[0].id
    return [
        ("dashboard", "/"),
        ("dashboard, 90 days", "/?days=90"),
        ("queue, pending page 1", f"/queues/{QUEUE}/?state=pending"),
        (f"queue, pending page {middle_page:,} (middle)", f"/queues/{QUEUE}/?state=pending&page={middle_page}"),
        (f"queue, pending page {last_page:,} (last)", f"/queues/{QUEUE}/?state=pending&page={last_page}"),
        ("queue, archived page 1", f"/queues/{QUEUE}/?state=archived"),
        ("queue, archived last page", f"/queues/{QUEUE}/?state=archived&page={max(1, -(-info.archived // 20))}"),
        ("queue, 100 rows per page", f"/queues/{QUEUE}/?state=pending&size=100"),
        ("queue, filter by text (bounded scan)", f"/queues/{QUEUE}/?state=pending&text=user999999%40"),
        ("queue, find by task id", f"/queues/{QUEUE}/?state=pending&task_id={newest}"),
        ("task detail, newest task", f"/queues/{QUEUE}/tasks/{newest}/"),
        # Its events were trimmed from the capped stream long ago: the history search reads its whole limit.
        ("task detail, oldest task (history trimmed)", f"/queues/{QUEUE}/tasks/{oldest}/"),
        # Its creation lies behind the queue's traffic since, in the stream: the history read starts at its last move.
        (f"task detail, pending {behind:,} from the newest", f"/queues/{QUEUE}/tasks/{deep}/"),
        ("task detail, pending in the middle", f"/queues/{QUEUE}/tasks/{middle}/"),
        *particular_pages(inspector),
        ("servers", "/servers/"),
        ("redis", "/redis/"),
        ("settings", "/settings/"),
        ("dashboard, charts 24 h", "/?range=24h"),
        ("dashboard, charts 30 d", "/?range=30d"),
        ("queue, charts 24 h", f"/queues/{QUEUE}/?state=pending&range=24h"),
        ("queue, charts 30 d", f"/queues/{QUEUE}/?state=pending&range=30d"),
        ("task type page, 1 h", f"/queues/{QUEUE}/types/email:bounce/"),
        ("task type page, 24 h", f"/queues/{QUEUE}/types/email:bounce/?range=24h"),
        ("charts alone (live redraw), queue 1 h", f"/queues/{QUEUE}/?range=1h&fragment=series"),
    ]


def particular_pages(inspector) -> list[tuple[str, str]]:
    """The pages of the tasks ``fill_particular`` made (none when the database was filled without them)."""
    found = [
        ("task detail, archived (newest)", inspector.list_tasks(QUEUE, "archived", page=1, size=1)),
        ("task detail, retried (creation exported)", inspector.list_tasks(QUEUE, "retry", page=1, size=1)),
        (f"task detail, {2 * MOVES} moves (long history)", _task(inspector, LONG_HISTORY)),
        ("task detail, in a group", _task(inspector, IN_GROUP)),
        ("task detail, in a workflow (waiting)", inspector.list_tasks(QUEUE, "waiting", page=1, size=1)),
    ]
    return [(label, f"/queues/{QUEUE}/tasks/{tasks[0].id}/") for label, tasks in found if tasks]


def _task(inspector, task_id: str) -> list:
    from taskq import TaskNotFoundError

    try:
        return [inspector.get_task(QUEUE, task_id)]
    except TaskNotFoundError:
        return []


def time_page(get: Callable[[str], object], path: str, repeat: int) -> list[float]:
    get(path)  # warm: templates compiled, scripts loaded, connections open
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        response = get(path)
        times.append(time.perf_counter() - began)
        assert response.status_code in (200, 302), f"{path}: HTTP {response.status_code}"
    return times


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_database(args.redis_url)
    import redis

    conn = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory(prefix="taskq-console-scale-") as workdir:
        setup_django(args.redis_url, workdir)
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.test import Client

        from taskq.queues import conf

        try:
            if not args.reuse:
                conn.flushdb()
                fill(args.redis_url, args.pending, args.archived, args.queues)
            export_dir = Path(args.export_dir or workdir) / "events"
            if not any(export_dir.glob("date=*/*.parquet")):
                fill_exported(args.redis_url, str(export_dir), args.export_batch)
            settings.TASKS_EVENT_EXPORT_DIR = str(export_dir)
            user = get_user_model().objects.create_superuser("bench", password="bench-only")
            client = Client()
            client.force_login(user)
            rows = []
            for label, path in pages(conf.get_inspector()):
                if args.only not in label:
                    continue
                times = time_page(client.get, path, args.repeat)
                rows.append((label, statistics.median(times) * 1000, p95(times) * 1000))
                print(f"{label:45} median {rows[-1][1]:8.1f} ms   p95 {rows[-1][2]:8.1f} ms", file=sys.stderr)
        finally:
            if not args.keep:
                conn.flushdb()
            conn.close()
    if args.markdown:
        print("| page | median | p95 |\n|---|---:|---:|")
        for label, median, high in rows:
            print(f"| {label} | {median:.1f} ms | {high:.1f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
