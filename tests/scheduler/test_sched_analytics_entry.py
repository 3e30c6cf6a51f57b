"""The product runs its own analytics on its own scheduler: the history app registers a periodic entry."""

from __future__ import annotations

from django.conf import settings

from taskq.queues.engine import schedules


def test_the_daily_rollups_are_a_periodic_entry_of_the_app():
    import queues.history.tasks  # noqa: F401 - registers the entry, as the scheduler's discovery does

    [entry] = [e for e in schedules.entries() if e.type == "analytics:daily"]
    assert (entry.spec, entry.tz, entry.missed) == (settings.TASKS_ANALYTICS_SCHEDULE, "UTC", "run_once")
    assert settings.TASKS_ANALYTICS_SCHEDULE == "15 0 * * *"
