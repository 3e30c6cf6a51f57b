"""The analytics job: exported events (Parquet) -> per UTC day x queue x task type rollups, on Spark.

Uses the DataFrame API only, so it runs the same on ``local[*]``, a standalone cluster and Spark Connect. Each
run replaces the days it computes and nothing else: the Parquet output is overwritten per ``day`` partition
(dynamic partition overwrite), and the ``TaskDailyRollup`` rows of those days are replaced in one transaction.

``compute`` and ``run`` need Spark alone, not Django settings (``bench/pipeline.py`` runs them so); ``store`` and
``analytics`` write the rows, once Django is set up.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from taskq.queues import conf

COUNTS = ("enqueued", "started", "succeeded", "failed", "retried", "archived")
PERCENTILES = (0.5, 0.95, 0.99)
ACCURACY = 10_000  # percentile_approx: relative error about 1 / accuracy
LOOKBACK_DAYS = 1  # an attempt that started before midnight ends today: read the day before too
#: Input bytes per shuffle partition, and the most partitions: a few hundred events get one partition (Spark's
#: default of 200 made a small day take tens of seconds), a big one about one per 64 MiB of Parquet.
BYTES_PER_PARTITION = 64 * 1024 * 1024
MAX_PARTITIONS = 200
#: The key of the PostgreSQL advisory lock that one job storing rollups holds until its transaction ends ("tqru").
STORE_LOCK = 0x74717275


def day_range(first: date, last: date) -> list[str]:
    return [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]


def compute(spark: Any, events_dir: str, days: list[str]) -> Any:
    """The rollups of ``days`` (ISO dates) as a DataFrame, one row per day, queue and type."""
    from pyspark.sql import Window  # optional: pyspark (taskq[spark])
    from pyspark.sql import functions as F  # optional: pyspark (taskq[spark])

    lo = (date.fromisoformat(min(days)) - timedelta(days=LOOKBACK_DAYS)).isoformat()
    events = (
        spark.read.parquet(events_dir)
        .withColumn("date", F.col("date").cast("string"))
        .where(F.col("date").between(lo, max(days)))
        .where(F.col("task_id") != "")
    )  # a queue's own events (paused, running) are about no task
    by_task = Window.partitionBy("queue", "task_id").orderBy("at_ms", "stream_ms", "stream_seq")
    # An event stored twice (a batch exported again under another name) is the same row twice: same task, time and
    # stream id (``stream_ms``-``stream_seq``), so its copies sort next to it and a copy is a row whose stream id is
    # the previous row's. Found in the sort the window needs anyway, it costs no shuffle of its own; dropDuplicates
    # took one more, a third of the job's time on 10 million events (docs/benchmarks.md, "Pipeline").

    def same(column: str) -> Any:
        return F.col(column) == F.lag(column).over(by_task)

    # The day is a date until the rows are grouped: formatting it as text for each of 10 million events cost
    # seconds, for the 40 rows of the result it costs nothing.
    events = (
        events.withColumn("copy", F.coalesce(same("stream_ms") & same("stream_seq"), F.lit(False)))
        .where(~F.col("copy"))
        .withColumn("prev_to", F.lag("to_state").over(by_task))
        .withColumn("prev_at", F.lag("at_ms").over(by_task))
        .withColumn("day", F.to_date(F.timestamp_millis("at_ms")))
        .where(F.col("day").isin([date.fromisoformat(day) for day in days]))
    )
    frm, to = F.col("from_state"), F.col("to_state")
    started = (frm == "pending") & (to == "active")
    ended = (frm == "active") & (F.col("prev_to") == "active")
    flags = {
        "enqueued": (frm == "") & to.isin("pending", "scheduled", "aggregating"),
        "started": started,
        "succeeded": (frm == "active") & to.isin("done", "completed"),
        "failed": (frm == "active") & to.isin("retry", "archived"),
        "retried": (frm == "active") & (to == "retry"),
        "archived": (frm == "active") & (to == "archived"),
    }
    events = events.withColumn(
        "wait_ms", F.when(started & (F.col("prev_to") == "pending"), F.col("at_ms") - F.col("prev_at"))
    ).withColumn("run_ms", F.when(ended, F.col("at_ms") - F.col("prev_at")))
    ps = F.array(*[F.lit(p) for p in PERCENTILES])
    aggs = [F.sum(F.when(flag, 1).otherwise(0)).cast("long").alias(name) for name, flag in flags.items()]
    aggs += [
        F.percentile_approx("wait_ms", ps, ACCURACY).alias("wait"),
        F.percentile_approx("run_ms", ps, ACCURACY).alias("run"),
    ]
    out = events.groupBy("day", "queue", F.col("type").alias("task_type")).agg(*aggs)
    out = out.withColumn("day", F.col("day").cast("string"))  # ISO, yyyy-MM-dd
    decided = F.col("succeeded") + F.col("failed")
    out = out.withColumn("failure_rate", F.when(decided > 0, F.col("failed") / decided))
    for kind in ("wait", "run"):
        for i, p in enumerate(PERCENTILES):
            out = out.withColumn(f"{kind}_p{round(p * 100)}_ms", F.col(kind)[i].cast("double"))
    return out.drop("wait", "run")


def write_parquet(rollups: Any, rollup_dir: str, days: list[str]) -> None:
    """Replace exactly the ``days`` partitions under ``rollup_dir``."""
    (rollups.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("day").parquet(rollup_dir))
    present = {row["day"] for row in rollups.select("day").distinct().collect()}
    for day in set(days) - present:  # a day with no events left: dynamic overwrite would keep the old files
        folder = Path(rollup_dir) / f"day={day}"
        if folder.is_dir():
            shutil.rmtree(folder)


def shuffle_partitions(events_dir: str, days: list[str]) -> int:
    """Shuffle partitions for a run over ``days``: one per BYTES_PER_PARTITION of the event files it reads (the
    days and the look-back day before them), at least 1, at most MAX_PARTITIONS."""
    lo = (date.fromisoformat(min(days)) - timedelta(days=LOOKBACK_DAYS)).isoformat()
    size = sum(
        f.stat().st_size
        for folder in Path(events_dir).glob("date=*")
        if lo <= folder.name.removeprefix("date=") <= max(days)
        for f in folder.glob("*.parquet")
    )
    return max(1, min(MAX_PARTITIONS, -(-size // BYTES_PER_PARTITION)))


def run(spark: Any, events_dir: str, rollup_dir: str, days: list[str]) -> list[dict[str, Any]]:
    """Compute, write the Parquet rollups and return the rows (for the database). The shuffle is sized to the
    input for this run (``shuffle_partitions``), and the session's setting put back after."""
    if not any(Path(events_dir).glob("date=*/*.parquet")):
        return []
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions(events_dir, days)))
    rollups = compute(spark, events_dir, days).cache()
    try:
        write_parquet(rollups, rollup_dir, days)
        return [row.asDict() for row in rollups.collect()]
    finally:
        rollups.unpersist()
        spark.conf.set("spark.sql.shuffle.partitions", before)


def store(rows: list[dict[str, Any]], days: list[str]) -> int:
    """Replace the ``TaskDailyRollup`` rows of ``days`` with ``rows``; returns how many were written."""
    # before setup: compute and run serve Spark without Django settings (bench/pipeline.py); models need them
    from .models import TaskDailyRollup

    objects = [
        TaskDailyRollup(
            day=date.fromisoformat(row["day"]),
            queue=row["queue"],
            task_type=row["task_type"],
            **{name: value for name, value in row.items() if name not in ("day", "queue", "task_type")},
        )
        for row in rows
    ]
    with transaction.atomic():
        _one_store_at_a_time()
        TaskDailyRollup.objects.filter(day__in=[date.fromisoformat(d) for d in days]).delete()
        TaskDailyRollup.objects.bulk_create(objects, batch_size=500)
    return len(objects)


def _one_store_at_a_time() -> None:
    """Make a store wait until any other one's transaction ends. Two jobs storing the same day at once (the nightly
    run and "Run analytics now") each delete the day's rows and insert theirs; on PostgreSQL the second one's
    delete cannot see the first one's uncommitted rows, so its insert broke the unique (day, queue, type)
    constraint once the first committed. Held until the transaction ends, the lock makes the second
    delete run after that commit and replace those rows. SQLite takes one writing transaction at a time anyway."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK])


def analytics(spark: Any, days: list[str], events_dir: str | None = None, rollup_dir: str | None = None) -> int:
    """The whole job for ``days``, with the directories from the settings unless given."""
    taskq = conf.taskq_settings()
    rows = run(spark, events_dir or taskq.event_export_dir, rollup_dir or taskq.rollup_dir, days)
    return store(rows, days)
