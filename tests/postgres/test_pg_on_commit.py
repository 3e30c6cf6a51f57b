"""Transactions around enqueues made on commit (``taskq.queues.transaction.enqueue_on_commit``), on PostgreSQL, where
other connections, a worker's among them, see only committed rows. A task that reaches Redis must find its rows
committed; a rolled-back transaction (or savepoint) enqueues nothing; a committed one enqueues once."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connections, transaction

from taskq.queues.engine.keys import Keys
from taskq.queues.transaction import enqueue_on_commit

pytestmark = pytest.mark.django_db(transaction=True)


class Rollback(Exception):
    pass


def pending(redis_client, queue: str) -> list[str]:
    return [task_id.decode() for task_id in redis_client.lrange(Keys().queue(queue).pending, 0, -1)]


def user_seen_from_another_connection(username: str) -> bool:
    """Whether a second connection, as a worker's would be, sees the user: Django gives each thread its own."""
    seen: list[bool] = []

    def read() -> None:
        try:
            seen.append(get_user_model().objects.filter(username=username).exists())
        finally:
            connections.close_all()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(timeout=30)
    assert seen, "the other connection did not answer"
    return seen[0]


def test_a_committed_transaction_enqueues_once_and_only_once_its_rows_are_visible(engine, redis_client):
    seen_when_enqueued: list[bool] = []
    with transaction.atomic():
        get_user_model().objects.create(username="ada")
        task_id = enqueue_on_commit("email:welcome", {"user": "ada"}, queue="mail")
        # Callbacks run in the order they were registered: this one runs right after the enqueue.
        transaction.on_commit(lambda: seen_when_enqueued.append(user_seen_from_another_connection("ada")))
        assert not user_seen_from_another_connection("ada"), "another connection read an uncommitted row"
        assert pending(redis_client, "mail") == [], "enqueued before the commit"
    assert pending(redis_client, "mail") == [task_id]
    assert seen_when_enqueued == [True]
    with transaction.atomic():  # a later transaction runs no callback of the first again
        get_user_model().objects.create(username="grace")
    assert pending(redis_client, "mail") == [task_id]


def test_a_rolled_back_transaction_enqueues_nothing(engine, redis_client):
    with pytest.raises(Rollback), transaction.atomic():
        get_user_model().objects.create(username="ada")
        enqueue_on_commit("email:welcome", {"user": "ada"}, queue="mail")
        raise Rollback
    assert not get_user_model().objects.filter(username="ada").exists()
    assert redis_client.dbsize() == 0


def test_a_rolled_back_savepoint_drops_its_enqueue_and_keeps_the_outer_ones(engine, redis_client):
    with transaction.atomic():
        kept = enqueue_on_commit("email:welcome", {"user": "ada"}, queue="mail")
        with pytest.raises(Rollback), transaction.atomic():  # a savepoint
            enqueue_on_commit("email:welcome", {"user": "bob"}, queue="mail")
            raise Rollback
        after = enqueue_on_commit("email:welcome", {"user": "grace"}, queue="mail")
        assert pending(redis_client, "mail") == []
    assert sorted(pending(redis_client, "mail")) == sorted([kept, after])


def test_a_transaction_that_fails_at_the_database_enqueues_nothing(engine, redis_client):
    """A unique violation aborts the PostgreSQL transaction; what was enqueued on commit in it never is."""
    get_user_model().objects.create(username="ada")
    with pytest.raises(IntegrityError), transaction.atomic():
        enqueue_on_commit("email:welcome", {"user": "ada"}, queue="mail")
        get_user_model().objects.create(username="ada")
    assert redis_client.dbsize() == 0
