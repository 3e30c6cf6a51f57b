"""A Python ``taskworker`` on asynq's keys handles what Go's client enqueues, as an asynq server would: success,
completion with retention and the janitor, retry with asynq's backoff or the handler's own delay, archive after
the last retry, SkipRetry, RetryWithoutFailure, results, deadlines, cancellation, shutdown; and Go's Inspector
lists the Python server and the task it runs."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
from typing import Any

import pytest
import redis

from taskq.queues.engine.asynq.keys import ALL_SERVERS, AsynqQueueKeys
from tests.worker.worker_support import ROOT, worker_env

from .conftest import PY_WORKER_ENV
from .go_asynq import GoAsynqError, wait_until

ROOT_TIMEOUT = 30.0


def spec(task_type: str, task_id: str, payload: bytes = b"", **options: Any) -> dict[str, Any]:
    return {"type": task_type, "task_id": task_id, "payload": base64.b64encode(payload).decode(), **options}


def task_or_none(go, queue: str, task_id: str) -> dict[str, Any] | None:
    try:
        return go("task", queue, task_id)
    except GoAsynqError as exc:
        if "not found" in str(exc).lower():
            return None
        raise


def in_state(go, queue: str, task_id: str, state: str) -> dict[str, Any] | None:
    task = task_or_none(go, queue, task_id)
    return task if task is not None and task["state"] == state else None


def py_runs(go, r: redis.Redis, task_id: str) -> list[int]:
    return [retried for side, tid, retried, _ in go.runs(r) if side == "py" and tid == task_id]


def test_success_is_done_and_retention_completes_with_the_result_then_the_janitor_deletes(go, py_worker, r) -> None:
    go.enqueue(spec("work", "w1"))
    go.enqueue(spec("result", "r1", b"\x00answer\xff", retention_seconds=2))
    go.enqueue(spec("async:result", "r2", b"abc", retention_seconds=3600))
    py_worker("--queues", "default=1")
    completed = wait_until(lambda: in_state(go, "default", "r1", "completed"), ROOT_TIMEOUT)
    assert base64.b64decode(completed["result"]) == b"\x00answer\xff"  # written by the handler, read by Go
    assert completed["completed_at"] > 0 and completed["retried"] == 0
    by_async = wait_until(lambda: in_state(go, "default", "r2", "completed"), ROOT_TIMEOUT)
    assert base64.b64decode(by_async["result"]) == b"cba"
    wait_until(lambda: task_or_none(go, "default", "w1") is None, ROOT_TIMEOUT)
    assert py_runs(go, r, "w1") == [0] and py_runs(go, r, "r1") == [0]
    stats = {q["queue"]: q for q in go("stats")}["default"]
    assert stats["processed"] == 3 and stats["failed"] == 0
    wait_until(lambda: task_or_none(go, "default", "r1") is None, ROOT_TIMEOUT)  # past its retention: the janitor


def test_failure_retries_after_asynq_backoff_or_the_handler_delay(go, py_worker, r) -> None:
    go.enqueue(spec("fail", "f1", max_retry=3))
    go.enqueue(spec("fail:later", "f2", max_retry=3))
    go.enqueue(spec("nofail", "f3", max_retry=3))
    py_worker("--queues", "default=1")
    backoff = wait_until(lambda: in_state(go, "default", "f1", "retry"), ROOT_TIMEOUT)
    assert backoff["retried"] == 1 and "python handler failed" in backoff["last_err"]
    # asynq's default after the first failure: 0^4 + 15 + rand(30) * 1 seconds (whole seconds in Go's view).
    assert 15 - 1 <= backoff["next_process_at"] - backoff["last_failed_at"] <= 15 + 29 + 1
    given = wait_until(lambda: in_state(go, "default", "f2", "retry"), ROOT_TIMEOUT)
    assert given["retried"] == 1
    assert 3600 - 1 <= given["next_process_at"] - given["last_failed_at"] <= 3600 + 1
    not_counted = wait_until(lambda: in_state(go, "default", "f3", "retry"), ROOT_TIMEOUT)
    assert not_counted["retried"] == 0 and "not yet" in not_counted["last_err"]
    stats = {q["queue"]: q for q in go("stats")}["default"]
    assert stats["failed"] == 2 and stats["processed"] == 2  # RetryWithoutFailure counts neither, as in asynq


def test_archive_after_the_last_retry_and_at_once_on_skip_retry(go, py_worker, r) -> None:
    go.enqueue(spec("fail:fast", "a1", max_retry=1))
    go.enqueue(spec("skip", "a2", max_retry=5))
    py_worker("--queues", "default=1")
    spent = wait_until(lambda: in_state(go, "default", "a1", "archived"), ROOT_TIMEOUT)
    assert spent["retried"] == 1 and "python handler failed" in spent["last_err"]
    assert py_runs(go, r, "a1") == [0, 1]
    skipped = wait_until(lambda: in_state(go, "default", "a2", "archived"), ROOT_TIMEOUT)
    assert skipped["retried"] == 0 and "gave up" in skipped["last_err"]
    assert py_runs(go, r, "a2") == [0]


def python_server(go, pid: int) -> dict[str, Any] | None:
    return next((s for s in go("servers") if s["pid"] == pid), None)


def test_go_lists_the_python_server_and_its_task_then_cancel_and_deadline_end_it(go, py_worker, r) -> None:
    go.enqueue(spec("sleep", "s1", b"60000", queue="slow"))
    go.enqueue(spec("sleep", "s2", b"60000", queue="slow", timeout_seconds=1))
    proc = py_worker("--queues", "slow=2,default=1", "--concurrency", "3", "--strict")
    server = wait_until(
        lambda: (s := python_server(go, proc.pid)) and len(s["active_workers"]) == 2 and s, ROOT_TIMEOUT
    )
    assert server["concurrency"] == 3 and server["queues"] == {"slow": 2, "default": 1}
    assert server["strict_priority"] is True and server["status"] == "active" and server["started"] > 0
    running = {w["task_id"]: w for w in server["active_workers"]}
    assert running["s1"]["task_type"] == "sleep" and running["s1"]["queue"] == "slow"
    assert base64.b64decode(running["s1"]["payload"]) == b"60000"
    assert running["s2"]["deadline"] - running["s2"]["started"] <= 1 + 1  # now + timeout
    assert [t["is_orphaned"] for t in go("ls", "slow", "active")] == [False, False]  # leases kept alive
    ended = wait_until(lambda: in_state(go, "slow", "s2", "retry"), ROOT_TIMEOUT)
    assert ended["last_err"] == "context deadline exceeded" and ended["retried"] == 1
    go("act", "cancel", "s1")
    cancelled = wait_until(lambda: in_state(go, "slow", "s1", "retry"), ROOT_TIMEOUT)
    assert cancelled["last_err"] == "context canceled" and cancelled["retried"] == 1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(ROOT_TIMEOUT) == 0
    assert python_server(go, proc.pid) is None  # its keys cleared on the way out
    assert r.zcard(ALL_SERVERS) == 0


def test_shutdown_requeues_what_still_runs_after_the_timeout(go, py_worker, r) -> None:
    go.enqueue(spec("sleep", "long", b"60000"))
    proc = py_worker("--queues", "default=1", "--shutdown-timeout", "0.5")
    wait_until(lambda: in_state(go, "default", "long", "active"), ROOT_TIMEOUT)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(ROOT_TIMEOUT) == 0
    back = go("task", "default", "long")
    assert back["state"] == "pending" and back["retried"] == 0
    assert r.zcard(AsynqQueueKeys("default").lease) == 0


def test_a_queue_paused_by_go_inspector_is_left_alone_until_unpaused(go, py_worker, r) -> None:
    go("act", "pause", "held")
    go.enqueue(spec("work", "paused-1", queue="held"))
    go.enqueue(spec("work", "open-1", queue="open"))
    py_worker("--queues", "held=2,open=1", "--strict")  # strict: "held" is always tried first
    wait_until(lambda: task_or_none(go, "open", "open-1") is None, ROOT_TIMEOUT)
    assert go("task", "held", "paused-1")["state"] == "pending" and py_runs(go, r, "paused-1") == []
    go("act", "unpause", "held")
    wait_until(lambda: task_or_none(go, "held", "paused-1") is None, ROOT_TIMEOUT)
    assert py_runs(go, r, "paused-1") == [0]


@pytest.mark.parametrize(
    "flags",
    [("--pool", "process"), ("--processes", "2"), ("--prefetch", "3"), ("--queues", "tenant-*=1")],
)
def test_taskq_only_options_are_refused_on_asynq_keys(flags: tuple[str, ...], redis_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "taskworker", *flags],
        cwd=ROOT,
        env=worker_env(redis_url, **PY_WORKER_ENV),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "does not apply on asynq's keys" in done.stderr or "do not apply on asynq's keys" in done.stderr
