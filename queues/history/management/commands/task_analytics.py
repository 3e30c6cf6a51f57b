"""``python manage.py task_analytics [--date D | --since D]``: roll the exported task events up per day, queue
and task type on Spark, into the Parquet rollups and the History page's table."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from taskq.queues import conf, key_format
from taskq.queues.engine.quoting import shown
from taskq.queues.history.rollups import analytics, day_range
from taskq.queues.sparkconf import SparkSettings, build_session


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"not a date (YYYY-MM-DD): {shown(text)}") from None


class Command(BaseCommand):
    help = "Compute the daily task rollups (counts, failure rate, wait and run percentiles) with Spark."

    def add_arguments(self, parser: Any) -> None:
        when = parser.add_mutually_exclusive_group()
        when.add_argument("--date", help="the UTC day to compute (default: today)")
        when.add_argument("--since", help="compute every day from this one through today")
        parser.add_argument("--events", default=None, help="exported events (default: TASKS_EVENT_EXPORT_DIR)")
        parser.add_argument("--rollups", default=None, help="Parquet rollups (default: TASKS_ROLLUP_DIR)")

    def handle(self, *args: Any, **options: Any) -> None:
        if key_format.on_asynq(conf.taskq_settings()):
            # Its input is the exported event stream, which asynq's keys do not carry: there is nothing to roll up.
            raise CommandError(
                "task_analytics rolls up the exported event stream, which a Go asynq deployment's keys "
                '(TASKS_KEY_FORMAT = "asynq") do not carry: nothing was computed'
            )
        today = datetime.now(UTC).date()
        if options["since"]:
            first = _day(options["since"])
            if first > today:
                raise CommandError("--since is in the future")
            days = day_range(first, today)
        else:
            day = _day(options["date"]) if options["date"] else today
            days = day_range(day, day)
        # optional: pyspark (taskq[spark])
        from pyspark.sql import SparkSession

        existing = SparkSession.getActiveSession()  # called from a process that has one (tests): leave it be
        spark = existing or build_session(SparkSettings.from_settings(conf.taskq_settings()))
        try:
            rows = analytics(spark, days, options["events"], options["rollups"])
        finally:
            if existing is None:
                spark.stop()
        self.stdout.write(f"{rows} rollup row(s) for {days[0]}" + (f" .. {days[-1]}" if len(days) > 1 else ""))
