"""``TASKS_EAGER = True`` with TaskqBackend: ``enqueue`` runs the ``@task`` function at once, in this thread, and
``get_result`` reads what it did, as Django's ImmediateBackend reports a run; nothing is written to Redis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis

from tests.djtasks import tasks
from tests.djtasks.framework import TaskResultDoesNotExist, TaskResultStatus
from tests.djtasks.settings import TASKS

IMMEDIATE = (
    "django.tasks.backends.immediate.ImmediateBackend"
    if tasks.task.__module__.startswith("django.tasks")
    else "django_tasks.backends.immediate.ImmediateBackend"
)


@pytest.fixture
def eager(tasks_settings, taskq_redis: redis.Redis, signal_log: Path, monkeypatch):
    tasks_settings.TASKS_EAGER = True
    tasks_settings.TASKS = {**TASKS, "immediate": {"BACKEND": IMMEDIATE}}
    monkeypatch.setenv(tasks.SIGNAL_LOG, str(signal_log))
    yield tasks_settings
    assert taskq_redis.dbsize() == 0, "eager mode wrote to Redis"


def signals(log: Path) -> list[tuple[str, str]]:
    return [(line["signal"], line["status"]) for line in map(json.loads, log.read_text().splitlines())]


def test_enqueue_runs_the_task_and_get_result_reads_it(eager, signal_log):
    enqueued = tasks.greet.using(queue_name="djtasks-mail").enqueue("ada", punctuation="?")
    assert enqueued.status == TaskResultStatus.SUCCESSFUL
    assert enqueued.return_value == {"greeting": "hello ada?"}

    result = tasks.greet.get_result(enqueued.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"greeting": "hello ada?"}
    assert result.task.queue_name == "djtasks-mail"
    assert (result.args, result.kwargs, result.backend) == (["ada"], {"punctuation": "?"}, "default")
    assert result.enqueued_at <= result.started_at == result.last_attempted_at <= result.finished_at
    assert len(result.worker_ids) == 1 and result.worker_ids[0] and result.errors == []
    # As the ImmediateBackend sends them, in this process.
    assert signals(signal_log) == [("enqueued", "READY"), ("started", "RUNNING"), ("finished", "SUCCESSFUL")]


def test_a_failure_is_a_failed_result_not_an_exception(eager, signal_log):
    enqueued = tasks.fail.enqueue("no stamps")  # TASKS_EAGER_PROPAGATES is on: @task results follow Django
    result = tasks.fail.get_result(enqueued.id)
    for seen in (enqueued, result):
        assert seen.status == TaskResultStatus.FAILED
        [error] = seen.errors
        assert error.exception_class_path == "tests.djtasks.tasks.Refused"
        assert "no stamps" in error.traceback and "raise Refused(reason)" in error.traceback
        assert seen.finished_at is not None
    assert signals(signal_log)[-1] == ("finished", "FAILED")


def test_it_reports_what_django_s_immediate_backend_reports(eager):
    def shape(result):
        errors = [(e.exception_class_path, "raise Refused(reason)" in e.traceback) for e in result.errors]
        value = result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None
        times = [result.enqueued_at, result.started_at, result.last_attempted_at, result.finished_at]
        return result.status, value, errors, len(result.worker_ids), [t is not None for t in times]

    for task, args in ((tasks.add, (1, 2)), (tasks.fail, ("refused",))):
        ours = task.enqueue(*args)
        theirs = task.using(backend="immediate").enqueue(*args)
        assert shape(task.get_result(ours.id)) == shape(theirs)


def test_one_attempt_whatever_max_retries_says(eager):
    flaky = tasks.flaky.using(backend="retrying", queue_name="djtasks-retry")  # MAX_RETRIES 2
    result = flaky.get_result(flaky.enqueue(succeed_on=2).id)
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["builtins.RuntimeError"]
    assert "attempt 1 fails" in result.errors[0].traceback


def test_context_async_functions_and_the_async_api(eager):
    async def enqueue_and_read():
        enqueued = await tasks.async_add.aenqueue(2, 3)
        return enqueued, await tasks.async_add.aget_result(enqueued.id)

    enqueued, read = asyncio.run(enqueue_and_read())
    assert read.status == TaskResultStatus.SUCCESSFUL
    assert read.return_value == {"sum": 5, "attempt": 1, "result_id": enqueued.id}
    assert tasks.flaky.get_result(tasks.flaky.enqueue(succeed_on=1).id).return_value["attempt"] == 1


def test_refresh_and_unknown_ids(eager):
    enqueued = tasks.add.enqueue(2, 2)
    enqueued.refresh()
    assert enqueued.return_value == 4
    for unknown in ("0" * 32, "x" * 500, ""):
        with pytest.raises(TaskResultDoesNotExist):
            tasks.add.get_result(unknown)


def test_bad_arguments_are_refused_and_nothing_runs(eager, signal_log):
    with pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)
    assert not signal_log.exists()


@pytest.mark.django_db
def test_inside_a_transaction_it_runs_when_the_transaction_commits(eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        enqueued = tasks.add.enqueue(1, 1)
        assert enqueued.status == TaskResultStatus.READY  # not before the commit, as on a worker
    assert enqueued.status == TaskResultStatus.SUCCESSFUL
    assert tasks.add.get_result(enqueued.id).return_value == 2


def test_results_are_read_from_any_thread_of_the_process(eager):
    import threading

    enqueued = tasks.add.enqueue(3, 4)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(tasks.add.get_result(enqueued.id).return_value))
    thread.start()
    thread.join()
    assert seen == [7]
