"""``analytics:daily``: the analytics job as a Spark task on our own queues, run by our own scheduler.

A periodic entry enqueues it every day at ``TASKS_ANALYTICS_SCHEDULE`` (cron, UTC; default 00:15, when yesterday
is complete; empty turns it off) for any ``taskscheduler`` running. Without a date it rolls up yesterday;
``{"date": "2026-11-21"}`` (or ``"today"``, ``"yesterday"``) or ``{"since": "2026-11-01"}`` pick the days when
enqueued by hand. ``TASKS_ANALYTICS_TODAY_SCHEDULE`` (cron; empty by default, every few minutes in the demo)
also rolls up today so far, so the History page fills while the day runs.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from taskq.queues import conf
from taskq.queues.engine import SkipRetry, Task, extras, handler, schedule

from .rollups import analytics, day_range


def days_of(payload: dict[str, str]) -> list[str]:
    today = datetime.now(UTC).date()
    try:
        if payload.get("since"):
            return day_range(date.fromisoformat(payload["since"]), today)
        if payload.get("date"):
            named = {"today": today, "yesterday": today - timedelta(days=1)}
            day = named.get(payload["date"]) or date.fromisoformat(payload["date"])
            return day_range(day, day)
    except ValueError as exc:
        raise SkipRetry(f"bad date in payload: {exc}") from None
    yesterday = today - timedelta(days=1)
    return day_range(yesterday, yesterday)


@handler("analytics:daily", spark=True, max_retry=3, timeout=3600)
def daily_rollups(task: Task) -> None:
    payload = task.json() if task.payload else {}
    days = days_of(payload if isinstance(payload, dict) else {})
    rows = analytics(task.spark, days)
    task.write_result({"days": days, "rows": rows})


_taskq = conf.taskq_settings()
# Without the spark extra nothing is scheduled: each run would fail. taskq.W121 (taskq.queues.extras_checks) warns a
# project that set a schedule of its own; enqueued by hand, the task fails naming the extra to install.
_with_spark = not extras.missing_modules("spark")
# run_once: a scheduler that was down at 00:15 still rolls up yesterday when it comes back.
if _taskq.analytics_schedule and _with_spark:
    schedule(
        _taskq.analytics_schedule,
        "analytics:daily",
        {},
        tz="UTC",
        missed="run_once",
        name="daily task-history rollups",
    )

if _taskq.analytics_today_schedule and _with_spark:
    schedule(
        _taskq.analytics_today_schedule,
        "analytics:daily",
        {"date": "today"},
        tz="UTC",
        name="today's task-history rollups, so far",
    )
