"""Handlers for the cluster and Connect integration tests (imported by a taskworker subprocess)."""

import json

from taskq.queues.engine import handler


@handler("report:cluster", spark=True)
def report(task):
    # DataFrame API only: the same code runs on a standalone cluster and on Spark Connect.
    total = task.spark.range(0, 100_000, 1, 4).selectExpr("sum(id) AS s").collect()[0]["s"]
    task.write_result({"sum": total})


@handler("report:endless", spark=True, retry_delay=lambda *_: 3600)
def endless(task):
    # Some 10^12 rows on one core: it runs for hours unless the worker interrupts its Spark job. How the query
    # ended goes to the file the test names (the task's own outcome is written at the cancel, not when it ends).
    try:
        task.spark.range(0, 10**12, 1, 8).selectExpr("sum(id % 7) AS s").collect()
        ended = "finished"
    except Exception as exc:
        ended = f"{type(exc).__name__}: {exc}"
    with open(json.loads(task.payload)["marker"], "w") as out:
        out.write(ended)
