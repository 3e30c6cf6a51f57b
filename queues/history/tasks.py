"""``analytics:daily``: the analytics job as a Spark task on our own queues.

Enqueue it once a day (a periodic task, or cron: ``manage.py tasks task enqueue analytics:daily --payload
'{}'``); without a date it rolls up yesterday (UTC), which is complete by then; ``{"date": "2026-11-21"}`` or
``{"since": "2026-11-01"}`` pick the days.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from queues.engine import SkipRetry, Task, handler

from .rollups import analytics, day_range


def days_of(payload: dict[str, str]) -> list[str]:
    today = datetime.now(UTC).date()
    try:
        if payload.get("since"):
            return day_range(date.fromisoformat(payload["since"]), today)
        if payload.get("date"):
            day = date.fromisoformat(payload["date"])
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
