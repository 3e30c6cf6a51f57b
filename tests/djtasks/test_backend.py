"""TaskqBackend through the framework's public API only (``enqueue``, ``aenqueue``, ``get_result``,
``aget_result``, ``TaskResult``, the signals), with a real ``manage.py taskworker`` process running the tasks.

The one operator action used, ``Inspector.run_task``, stands in for the wait of a retry's backoff."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from taskq.queues.engine import Client, PayloadTooDeepError
from tests.djtasks import tasks
from tests.djtasks.framework import InvalidTask, TaskResultDoesNotExist, TaskResultStatus, task_enqueued
from tests.waiting import wait_for

pytestmark = pytest.mark.usefixtures("tasks_settings")


def finished(task, result_id):
    """The task's result once it is SUCCESSFUL or FAILED."""
    return wait_for(lambda: (r := task.get_result(result_id)).is_finished and r, what=f"result {result_id}")


def test_success_returns_the_value_with_its_times_and_worker(taskworker):
    greet = tasks.greet.using(queue_name="djtasks-mail")
    enqueued = greet.enqueue("ada", punctuation="?")
    assert enqueued.status == TaskResultStatus.READY

    result = finished(greet, enqueued.id)
    assert result.task.queue_name == "djtasks-mail"
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"greeting": "hello ada?"}
    assert (result.args, result.kwargs) == (["ada"], {"punctuation": "?"})
    assert result.enqueued_at <= result.started_at <= result.last_attempted_at <= result.finished_at
    assert len(result.worker_ids) == 1 and result.worker_ids[0]
    assert result.errors == []
    assert result.backend == "default"
    enqueued.refresh()
    assert enqueued.return_value == {"greeting": "hello ada?"}


def test_failure_keeps_the_exception_class_and_traceback(taskworker):
    result = finished(tasks.fail, tasks.fail.enqueue("no stamps").id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "tests.djtasks.tasks.Refused"
    assert error.exception_class is tasks.Refused
    assert "no stamps" in error.traceback and "raise Refused(reason)" in error.traceback
    with pytest.raises(ValueError):
        result.return_value  # noqa: B018 - the framework raises for a failed task's value


def test_a_retried_task_keeps_every_attempt(taskworker, inspector):
    flaky = tasks.flaky.using(backend="retrying", queue_name="djtasks-retry")  # MAX_RETRIES 2
    enqueued = flaky.enqueue(succeed_on=2)
    # The error is recorded while the attempt ends (RUNNING); READY once the task waits for its retry.
    first = wait_for(
        lambda: (r := flaky.get_result(enqueued.id)).status == TaskResultStatus.READY and r.errors and r,
        what="the first failure",
    )
    assert first.errors[0].exception_class_path == "builtins.RuntimeError"
    assert "attempt 1 fails" in first.errors[0].traceback
    inspector.run_task("djtasks-retry", enqueued.id)  # the backoff's wait, skipped

    result = finished(flaky, enqueued.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"attempt": 2, "result_id": enqueued.id}
    assert len(result.errors) == 1 and len(result.worker_ids) == 2 and result.attempts == 2
    assert result.started_at < result.last_attempted_at


def test_run_after_schedules_the_task(taskworker):
    run_after = datetime.now(UTC) + timedelta(seconds=1)
    enqueued = tasks.add.using(run_after=run_after).enqueue(1, 2)
    assert tasks.add.get_result(enqueued.id).status == TaskResultStatus.READY
    assert tasks.add.get_result(enqueued.id).task.run_after == run_after

    result = finished(tasks.add, enqueued.id)
    assert result.return_value == 3
    assert result.started_at >= run_after


def test_an_unknown_id_does_not_exist(tasks_settings, taskq_redis_url):
    for unknown in ("0" * 32, "x" * 500, ""):
        with pytest.raises(TaskResultDoesNotExist):
            tasks.add.get_result(unknown)
    # A taskq task enqueued without the framework is no result of the backend's.
    with Client(taskq_redis_url) as client:
        plain = client.enqueue("tests.djtasks.tasks.add", {"args": [1, 2], "kwargs": {}})
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(plain.id)


def test_arguments_that_are_not_json_are_refused_and_nothing_is_written(taskq_redis):
    with pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)
    assert taskq_redis.dbsize() == 0


def test_arguments_nested_past_the_payload_limit_are_refused_and_nothing_is_written(taskq_redis):
    deep: list = []
    for _ in range(10_000):  # far past Python's recursion limit, which the framework's normalizing would hit
        deep = [deep]
    with pytest.raises(PayloadTooDeepError, match="nested deeper than 63 levels"):
        tasks.add.enqueue(deep, 1)
    assert taskq_redis.dbsize() == 0


def test_a_return_value_that_is_not_json_fails_the_task(taskworker):
    result = finished(tasks.not_json, tasks.not_json.enqueue().id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "taskq.queues.tasks_runner.ReturnValueNotJSON"
    assert "date" in error.traceback and "not JSON" in error.traceback


def test_async_functions_run_and_get_their_context(taskworker):
    async def enqueue_and_read():
        enqueued = await tasks.async_add.aenqueue(2, 3)
        return enqueued, await tasks.async_add.aget_result(enqueued.id)

    enqueued, read = asyncio.run(enqueue_and_read())
    assert read.id == enqueued.id
    result = finished(tasks.async_add, enqueued.id)
    assert result.return_value == {"sum": 5, "attempt": 1, "result_id": enqueued.id}


def test_the_framework_refuses_what_the_backend_cannot_do():
    with pytest.raises(InvalidTask):
        tasks.add.using(queue_name="not-in-queues")
    with pytest.raises(InvalidTask):
        tasks.add.using(priority=5)  # supports_priority is False: taskq queues are first in, first out


def test_signals_are_sent_where_the_framework_defines_them(taskworker, signal_log: Path):
    seen = []

    def on_enqueued(sender, task_result, **kwargs):
        seen.append((sender.__name__, task_result.id, task_result.enqueued_at is not None))

    task_enqueued.connect(on_enqueued)
    try:
        ok = tasks.add.enqueue(2, 2)
        bad = tasks.fail.enqueue("signalled")
    finally:
        task_enqueued.disconnect(on_enqueued)
    assert seen == [("TaskqBackend", ok.id, True), ("TaskqBackend", bad.id, True)]
    finished(tasks.add, ok.id)
    finished(tasks.fail, bad.id)

    lines = [json.loads(line) for line in signal_log.read_text().splitlines()]
    by_id = {(line["id"], line["signal"]): line["status"] for line in lines}
    assert by_id == {
        (ok.id, "started"): "RUNNING",
        (ok.id, "finished"): "SUCCESSFUL",
        (bad.id, "started"): "RUNNING",
        (bad.id, "finished"): "FAILED",
    }
    assert {line["pid"] for line in lines} == {taskworker.pid}  # in the worker, not here


def test_a_result_is_gone_after_its_retention(taskworker):
    brief = tasks.brief.using(backend="short", queue_name="djtasks-short")  # RESULT_RETENTION 1 s
    enqueued = brief.enqueue()
    assert finished(brief, enqueued.id).return_value == "gone soon"

    def gone():
        try:
            brief.get_result(enqueued.id)
        except TaskResultDoesNotExist:
            return True
        return False

    wait_for(gone, what="the janitor to delete the result past its retention")


def test_the_worker_runs_only_functions_decorated_as_tasks(taskworker, taskq_redis_url, inspector):
    """Anyone who can enqueue picks a type: a path to a plain function, or to a module no app holds, runs
    nothing."""
    with Client(taskq_redis_url) as client:
        ids = [
            client.enqueue(
                path, {"args": [], "kwargs": {}}, max_retry=0, headers={"django-tasks-backend": "default"}
            ).id
            for path in ("tests.djtasks.tasks._record", "os.getcwd", "antigravity.fly")
        ]
    for task_id in ids:
        archived = wait_for(lambda i=task_id: (t := inspector.get_task("default", i)).state == "archived" and t)
        assert "no handler" in archived.last_error


def test_error_groups_name_the_task_function(taskworker, inspector):
    finished(tasks.fail, tasks.fail.enqueue("grouped").id)
    finished(tasks.not_json, tasks.not_json.enqueue().id)  # raised by the runner, after the function returned
    frames = {group.task_type: group.frame for group in inspector.error_groups("default")}
    assert frames == {
        "tests.djtasks.tasks.fail": "tests.djtasks.tasks:fail",
        "tests.djtasks.tasks.not_json": "tests.djtasks.tasks:not_json",
    }


def test_result_times_keep_microseconds(taskworker, signal_log: Path):
    seen = []
    task_enqueued.connect(on_enqueued := lambda sender, task_result, **kw: seen.append(task_result.enqueued_at))
    try:
        enqueued = tasks.add.enqueue(1, 1)
    finally:
        task_enqueued.disconnect(on_enqueued)
    result = finished(tasks.add, enqueued.id)
    lines = {line["signal"]: line for line in map(json.loads, signal_log.read_text().splitlines())}
    # The very moments the enqueuing process and the worker told the signals, not ones cut to milliseconds.
    assert result.enqueued_at == enqueued.enqueued_at == seen[0]
    assert result.started_at.isoformat() == lines["started"]["started_at"]
    assert result.finished_at.isoformat() == lines["finished"]["finished_at"]
    moments = (result.enqueued_at, result.started_at, result.finished_at)
    assert any(moment.microsecond % 1000 for moment in moments)  # all three on whole milliseconds: 1 in 10^9
