"""Spark tasks in a real worker on a real local Spark: result, progress, cancel, timeout, readable failures."""

from __future__ import annotations

import threading
import time

import pytest
from spark_support import state_of, wait_for

from taskq.queues.engine import handler

pytestmark = pytest.mark.spark


def slow_job(spark, rows: int = 400, partitions: int = 40, pause: float = 0.25) -> int:
    """A job that takes rows * pause / partitions... long enough: every row sleeps in a Python UDF."""
    from pyspark.sql import functions as F

    @F.udf("long")
    def sleepy(x):
        time.sleep(pause)
        return x

    return spark.range(0, rows, 1, partitions).select(sleepy("id").alias("v")).agg(F.sum("v")).collect()[0][0]


def test_spark_task_succeeds_writes_its_result_and_progress(make_server, registry, client, inspector):
    @handler("report:daily", spark=True, registry=registry)
    def report(task):
        total = task.spark.range(0, 1000, 1, 4).selectExpr("sum(id) AS s").collect()[0]["s"]
        task.write_result({"sum": total})

    make_server()
    info = client.enqueue("report:daily", {}, retention=600)
    final = client.wait(info.id, queue="default", timeout=90)
    assert final.state == "completed", final.last_error
    assert final.result == b'{"sum":499500}'
    done, total = inspector.get_task("default", info.id).progress
    assert total >= 4 and done == total


def test_progress_shows_while_the_job_runs(make_server, registry, client, inspector):
    @handler("report:slow", spark=True, registry=registry)
    def report(task):
        slow_job(task.spark, rows=60, partitions=20, pause=0.05)

    make_server()
    info = client.enqueue("report:slow", {}, retention=600)
    seen = set()

    def progress_seen():
        progress = inspector.get_task("default", info.id).progress
        if progress:
            seen.add(progress)
        return state_of(inspector, "default", info.id) == "completed"

    wait_for(progress_seen, what="the slow task to complete")
    partial = [(done, total) for done, total in seen if done < total]
    assert partial, f"no progress while running, only {seen}"


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_cancel_and_timeout_stop_a_long_spark_job(make_server, registry, client, inspector, how):
    started, ended = threading.Event(), threading.Event()
    outcome = {}

    @handler("report:long", spark=True, registry=registry, retry_delay=lambda *_: 3600)
    def report(task):
        started.set()
        try:
            slow_job(task.spark, rows=4000, partitions=40, pause=0.25)  # 1000 s on one core unless stopped
            outcome["finished"] = True
        except Exception as exc:
            outcome["error"] = exc
            raise
        finally:
            ended.set()

    make_server()
    info = client.enqueue("report:long", {}, max_retry=3, timeout=4 if how == "timeout" else 600)
    assert started.wait(60)
    if how == "cancel":
        wait_for(lambda: inspector.get_task("default", info.id).progress, what="the job to start")
        inspector.cancel_task("default", info.id)
    assert ended.wait(60), "the Spark job was not stopped"
    assert "finished" not in outcome
    wait_for(lambda: state_of(inspector, "default", info.id) == "retry", what="the task to go to retry")
    error = inspector.get_task("default", info.id).last_error
    assert ("cancelled by an operator" if how == "cancel" else "timed out after 4 s") in error


def test_failing_spark_job_retries_then_archives_with_a_readable_error(make_server, registry, client, inspector):
    from pyspark.sql import functions as F

    runs = []

    @handler("report:broken", spark=True, registry=registry, retry_delay=lambda *_: 0)
    def report(task):
        runs.append(task.retried)

        @F.udf("long")
        def broken(x):
            raise ValueError(f"bad row {x}")

        task.spark.range(0, 4, 1, 1).select(broken("id")).collect()

    make_server()
    info = client.enqueue("report:broken", {}, max_retry=1)
    wait_for(lambda: state_of(inspector, "default", info.id) == "archived", what="the task to be archived")
    assert runs == [0, 1]
    error = inspector.get_task("default", info.id).last_error
    assert error.startswith("SparkJobError: ")
    assert "ValueError: bad row 0" in error
    assert len(error) < 1100 and "\tat " not in error and "JVM stacktrace" not in error
