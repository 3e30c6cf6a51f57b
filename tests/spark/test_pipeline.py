"""The analytics job on synthetic exported events with known answers, and re-running a day."""

from __future__ import annotations

import math
import shutil
from datetime import date
from pathlib import Path

import pytest

from taskq.queues.engine.export_store import StreamEntry
from taskq.queues.history.event_files import write_batch
from taskq.queues.history.models import TaskDailyRollup
from taskq.queues.history.rollups import analytics

# The CLI test starts a JVM of its own next to the session's (its run may take up to 240 s on a busy machine, and
# the suite runs two test processes at once): the suite's 120 s limit would cut it short of its own.
pytestmark = [pytest.mark.spark, pytest.mark.django_db, pytest.mark.timeout(300)]

DAY1 = 1_763_000_000_000 - 1_763_000_000_000 % 86_400_000 + 3_600_000  # 01:00 UTC of some day
DAY2 = DAY1 + 86_400_000
D1, D2 = (date.fromtimestamp(t / 1000).isoformat() for t in (DAY1, DAY2))


class Events:
    def __init__(self) -> None:
        self.entries: dict[str, list[StreamEntry]] = {}
        self.seq = 0

    def add(self, queue: str, task_id: str, ttype: str, frm: str, to: str, at: int) -> None:
        self.seq += 1
        self.entries.setdefault(queue, []).append(
            StreamEntry(f"{at}-{self.seq}", {"id": task_id, "type": ttype, "from": frm, "to": to, "at": str(at)})
        )

    def write(self, directory: Path) -> None:
        for queue, entries in self.entries.items():
            write_batch(directory, queue, sorted(entries, key=lambda e: int(e.stream_id.split("-")[0])))


def day_of_tasks(events: Events, start: int, queue: str = "default", ttype: str = "email", n: int = 100):
    """n tasks: waits of 10, 20, ... ms; runs of 100, 200, ... ms; the last tenth fails once, then is archived."""
    waits, runs = [], []
    for i in range(n):
        t, tid = start + i * 10_000, f"{queue}-{ttype}-{start}-{i}"
        wait, run = (i + 1) * 10, (i + 1) * 100
        events.add(queue, tid, ttype, "", "pending", t)
        events.add(queue, tid, ttype, "pending", "active", t + wait)
        waits.append(wait)
        runs.append(run)
        if i < n * 9 // 10:
            events.add(queue, tid, ttype, "active", "done", t + wait + run)
        else:
            events.add(queue, tid, ttype, "active", "retry", t + wait + run)
            events.add(queue, tid, ttype, "retry", "pending", t + wait + run + 1000)
            events.add(queue, tid, ttype, "pending", "active", t + wait + run + 1005)
            events.add(queue, tid, ttype, "active", "archived", t + wait + run + 1005 + 50)
            waits.append(5)
            runs.append(50)
    return waits, runs


def nearest_rank(values: list[int], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def test_rollups_have_the_known_answers_and_a_rerun_replaces_only_its_day(spark, tmp_path):
    events_dir, rollup_dir = tmp_path / "events", str(tmp_path / "rollups")
    events = Events()
    waits, runs = day_of_tasks(events, DAY1)
    day_of_tasks(events, DAY1, queue="low", ttype="sms", n=10)
    day_of_tasks(events, DAY2, n=20)
    events.add("low", "", "", "running", "paused", DAY1 + 5)  # a queue's own event: no task, no type, no row
    events.write(events_dir)

    assert analytics(spark, [D1, D2], str(events_dir), rollup_dir) == 3
    email = TaskDailyRollup.objects.get(day=D1, queue="default", task_type="email")
    assert (email.enqueued, email.started, email.succeeded, email.failed, email.retried, email.archived) == (
        100,
        110,
        90,
        20,
        10,
        10,
    )
    assert email.failure_rate == pytest.approx(20 / 110)
    for p, field in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert getattr(email, f"wait_{field}_ms") == pytest.approx(nearest_rank(waits, p), abs=10)
        assert getattr(email, f"run_{field}_ms") == pytest.approx(nearest_rank(runs, p), abs=100)
    assert TaskDailyRollup.objects.get(day=D1, queue="low").enqueued == 10
    day2 = TaskDailyRollup.objects.get(day=D2)
    day2_files = sorted((Path(rollup_dir) / f"day={D2}").iterdir())
    day2_stamp = [(p.name, p.stat().st_mtime_ns) for p in day2_files]

    # More events arrive for day 1 (say, a late export batch); re-running day 1 replaces day 1 only.
    late = Events()
    day_of_tasks(late, DAY1 + 3_600_000, n=10)
    late.write(events_dir)
    assert analytics(spark, [D1], str(events_dir), rollup_dir) == 2
    assert TaskDailyRollup.objects.get(day=D1, queue="default").enqueued == 110
    assert TaskDailyRollup.objects.get(day=D2).computed_at == day2.computed_at
    assert [(p.name, p.stat().st_mtime_ns) for p in sorted((Path(rollup_dir) / f"day={D2}").iterdir())] == day2_stamp
    assert len(list((Path(rollup_dir) / f"day={D1}").glob("*.parquet"))) >= 1

    # Re-running is idempotent: same rows, no duplicates from a batch written twice.
    events.write(events_dir)
    assert analytics(spark, [D1], str(events_dir), rollup_dir) == 2
    assert TaskDailyRollup.objects.get(day=D1, queue="default").enqueued == 110

    # Nor from a batch stored twice under two names (exported again after its offset was lost): every event of
    # day 1 twice over counts once.
    once = TaskDailyRollup.objects.get(day=D1, queue="default", task_type="email")
    for original in list((events_dir / f"date={D1}").glob("*.parquet")):
        shutil.copy(original, original.with_name(f"again-{original.name}"))
    assert analytics(spark, [D1], str(events_dir), rollup_dir) == 2
    again = TaskDailyRollup.objects.get(day=D1, queue="default", task_type="email")
    assert (again.enqueued, again.started, again.succeeded, again.failed, again.retried, again.archived) == (
        110,
        121,
        99,
        22,
        11,
        11,
    )
    assert [getattr(again, f"{kind}_p{p}_ms") for kind in ("wait", "run") for p in (50, 95, 99)] == [
        getattr(once, f"{kind}_p{p}_ms") for kind in ("wait", "run") for p in (50, 95, 99)
    ]


def test_the_shuffle_is_sized_to_the_days_read_and_the_session_setting_comes_back(spark, tmp_path, monkeypatch):
    from taskq.queues.history import rollups

    events_dir = tmp_path / "events"
    events = Events()
    day_of_tasks(events, DAY1)
    day_of_tasks(events, DAY2, n=20)
    events.write(events_dir)
    assert rollups.shuffle_partitions(str(events_dir), [D1]) == 1  # a few KB: one partition, not Spark's 200
    day1_bytes = sum(f.stat().st_size for f in (events_dir / f"date={D1}").glob("*.parquet"))
    per = max(1, day1_bytes // 3)
    monkeypatch.setattr(rollups, "BYTES_PER_PARTITION", per)
    assert rollups.shuffle_partitions(str(events_dir), [D1]) == -(-day1_bytes // per)  # 3 or 4: day 1 (and its eve)
    assert rollups.shuffle_partitions(str(events_dir), ["2001-01-01"]) == 1  # nothing to read
    monkeypatch.setattr(rollups, "MAX_PARTITIONS", 2)
    assert rollups.shuffle_partitions(str(events_dir), [D1, D2]) == 2

    spark.conf.set("spark.sql.shuffle.partitions", "7")
    seen = []
    compute = rollups.compute
    monkeypatch.setattr(
        rollups,
        "compute",
        lambda session, *a: seen.append(session.conf.get("spark.sql.shuffle.partitions")) or compute(session, *a),
    )
    analytics(spark, [D1], str(events_dir), str(tmp_path / "rollups"))
    assert seen == ["2"] and spark.conf.get("spark.sql.shuffle.partitions") == "7"


def test_a_session_built_here_draws_no_progress_bars_and_logs_warnings_to_a_file():
    from taskq.queues.sparkconf import BASE_CONF, LOG4J_CONFIG, quiet_driver_options

    assert BASE_CONF["spark.ui.showConsoleProgress"] == "false"
    assert LOG4J_CONFIG.is_file() and "threshold.level = error" in LOG4J_CONFIG.read_text()
    assert (
        quiet_driver_options("/tmp/x.log") == f"-Dlog4j2.configurationFile={LOG4J_CONFIG} -Dtaskq.spark.log=/tmp/x.log"
    )


def test_task_analytics_prints_its_result_and_nothing_of_spark(tmp_path):
    """No progress bars and no WARN lines on the terminal: Spark's (and the JVM's) warnings go to the log."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    events = Events()
    day_of_tasks(events, DAY1, n=20)
    events.write(tmp_path / "events")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "taskq.console.settings", "DATABASE_URL": f"sqlite:///{tmp_path}/db"}
    env["METRICS_TOKEN"] = "unused"  # else the system checks warn (metrics.W001), and stderr is checked below
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=root, env=env, check=True)
    done = subprocess.run(
        [sys.executable, "manage.py", "task_analytics", "--date", D1, "--events", str(tmp_path / "events"),
         "--rollups", str(tmp_path / "rollups")],
        cwd=root, env=env, capture_output=True, text=True, timeout=240, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == f"1 rollup row(s) for {D1}"
    assert "WARN" not in done.stderr and "Stage" not in done.stderr and "[Stage" not in done.stdout, done.stderr
