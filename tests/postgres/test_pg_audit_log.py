"""The audit log under concurrent writers: operators and CLI users act at once from several console processes,
each request on its own connection. Nothing is lost, and the log reads in its documented order: newest first
(``AuditLog.Meta.ordering``: the time, then the id), each writer's entries in the order it wrote them."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from taskq.queues.audit import record_action
from taskq.queues.models import AuditLog

WRITERS = 6
ROUNDS = 15


def run_writers(write) -> None:
    """Run ``write(n)`` in WRITERS threads (Django gives each its own connection) and re-raise the first error."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            write(n)
        except BaseException as exc:  # re-raised in the test's thread below
            errors.append(exc)
        finally:
            connections.close_all()  # the test database is dropped at the end: leave no session on it

    threads = [threading.Thread(target=run, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer is stuck"
    if errors:
        raise errors[0]


@pytest.mark.django_db(transaction=True)
def test_writers_in_open_transactions_at_once_lose_nothing_and_keep_their_order():
    # Each round, every writer inserts its entry and waits, its transaction open, until all have: the inserts are
    # concurrent for certain, not only when the threads happen to overlap.
    all_inserted = threading.Barrier(WRITERS, timeout=30)

    def write(n: int) -> None:
        for i in range(ROUNDS):
            with transaction.atomic():
                record_action(None, "run_task", queue=f"queue-{n}", task_ids=[f"{n}-{i}"], username=f"cli:w{n}")
                all_inserted.wait()

    run_writers(write)

    entries = list(AuditLog.objects.all())
    assert len(entries) == WRITERS * ROUNDS
    assert len({entry.pk for entry in entries}) == len(entries)
    assert [(e.created_at, e.pk) for e in entries] == sorted(((e.created_at, e.pk) for e in entries), reverse=True)
    for n in range(WRITERS):
        mine = [entry.task_ids for entry in entries if entry.username == f"cli:w{n}"]
        assert mine == [[f"{n}-{i}"] for i in reversed(range(ROUNDS))], f"writer {n}'s entries out of order"
        assert {entry.queue for entry in entries if entry.username == f"cli:w{n}"} == {f"queue-{n}"}


@pytest.mark.django_db(transaction=True)
def test_a_writer_that_rolls_back_leaves_no_entry_and_holds_back_no_other():
    """A request that fails after recording (its transaction rolled back) leaves no entry, and the writers that
    commit meanwhile are not held up by its open transaction: their entries are there while it is still open."""
    inserted = threading.Event()
    others_done = threading.Event()

    class Failed(Exception):
        pass

    def write(n: int) -> None:
        if n == 0:
            with pytest.raises(Failed), transaction.atomic():
                record_action(None, "delete_all", queue="doomed", username="cli:failing")
                inserted.set()
                assert others_done.wait(timeout=30), "the other writers were held up"
                raise Failed
            return
        assert inserted.wait(timeout=30)
        record_action(None, "pause_queue", queue=f"queue-{n}", username=f"cli:w{n}")
        if AuditLog.objects.filter(username__startswith="cli:w").count() == WRITERS - 1:
            others_done.set()

    run_writers(write)

    assert not AuditLog.objects.filter(username="cli:failing").exists()
    assert sorted(AuditLog.objects.values_list("queue", flat=True)) == [f"queue-{n}" for n in range(1, WRITERS)]
