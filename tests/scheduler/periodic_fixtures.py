"""Periodic entries for the process tests (``taskscheduler --import periodic_fixtures``)."""

from taskq.queues.engine import schedule

EVERY_SECOND = schedule("@every 1s", "proc:tick", {"n": 1}, queue="proc")
