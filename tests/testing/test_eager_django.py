"""``TASKS_EAGER`` in Django: ``get_client()``, ``handler.enqueue`` and ``enqueue_on_commit`` follow the setting,
also when a test changes it (pytest-django's ``settings`` sends ``setting_changed``)."""

from __future__ import annotations

import pytest
import redis

from taskq.queues import conf
from taskq.queues.engine import Task, default_client, handler
from taskq.queues.transaction import enqueue_on_commit

RUNS: list[Task] = []


@handler("tests:eager:record")
def record(task: Task) -> None:
    RUNS.append(task)
    if task.json().get("fail"):
        raise ValueError("asked to fail")
    task.write_result({"seen": task.json()})


@pytest.fixture
def runs(settings_redis, redis_client: redis.Redis):
    RUNS.clear()
    yield RUNS
    RUNS.clear()
    assert redis_client.dbsize() == 0, "eager mode wrote to Redis"


def test_get_client_and_the_default_client_follow_tasks_eager(settings, runs: list[Task]) -> None:
    assert conf.get_client().eager is None and default_client().eager is None
    settings.TASKS_EAGER = True
    assert conf.get_client().enqueue("tests:eager:record", {"n": 1}).result_json() == {"seen": {"n": 1}}
    assert record.enqueue({"n": 2}).state == "completed"
    assert [task.json() for task in runs] == [{"n": 1}, {"n": 2}]
    with pytest.raises(ValueError, match="asked to fail"):
        record.enqueue({"fail": True})


def test_propagation_can_be_turned_off(settings, runs: list[Task]) -> None:
    settings.TASKS_EAGER = True
    settings.TASKS_EAGER_PROPAGATES = False
    info = record.enqueue({"fail": True})
    assert (info.state, info.last_error) == ("retry", "ValueError: asked to fail")


@pytest.mark.django_db
def test_enqueue_on_commit_runs_the_handler_when_the_transaction_commits(
    settings, runs: list[Task], django_capture_on_commit_callbacks
) -> None:
    settings.TASKS_EAGER = True
    with django_capture_on_commit_callbacks(execute=True):
        task_id = enqueue_on_commit("tests:eager:record", {"n": 3})
        assert runs == []  # not before the commit
    assert [(task.id, task.json()) for task in runs] == [(task_id, {"n": 3})]
