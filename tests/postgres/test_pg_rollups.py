"""Two analytics jobs storing the same day's History rollups at once (the nightly run and "Run analytics now", or
the today-so-far runs of two schedulers): each replaces the day's rows, and the table keeps one row per day, queue
and type (a unique constraint). On PostgreSQL the second must wait for the first and then replace its rows, not
break the constraint against rows it could not see yet."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from taskq.queues.history.models import TaskDailyRollup
from taskq.queues.history.rollups import store
from tests.waiting import wait_for

DAY = "2026-11-20"


def rollup(task_type: str, enqueued: int) -> dict:
    return {"day": DAY, "queue": "orders", "task_type": task_type, "enqueued": enqueued, "started": enqueued}


def waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_second_job_storing_the_same_day_waits_then_its_rows_replace_the_first_ones():
    first_stored, first_may_commit = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first_job() -> None:
        try:
            with transaction.atomic():  # store() and what the job does after, before its transaction commits
                store([rollup("email:send", 1), rollup("report:build", 1)], [DAY])
                first_stored.set()
                assert first_may_commit.wait(timeout=30)
        except BaseException as exc:  # re-raised in the test's thread below
            errors.append(exc)
        finally:
            connections.close_all()

    def second_job() -> None:
        try:
            store([rollup("email:send", 2)], [DAY])
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    first = threading.Thread(target=first_job)
    first.start()
    assert first_stored.wait(timeout=30)
    second = threading.Thread(target=second_job)
    second.start()
    wait_for(waiting_on_a_lock, what="the second job to wait for the first")
    first_may_commit.set()
    for thread in (first, second):
        thread.join(timeout=60)
    assert not first.is_alive() and not second.is_alive()
    if errors:
        raise errors[0]

    stored = TaskDailyRollup.objects.values_list("queue", "task_type", "enqueued")
    assert list(stored) == [("orders", "email:send", 2)], "the last job's rows are the day's rows"
