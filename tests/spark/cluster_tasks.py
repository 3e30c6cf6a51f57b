"""Handlers for the cluster and Connect integration tests (imported by a taskworker subprocess)."""

from queues.engine import handler


@handler("report:cluster", spark=True)
def report(task):
    # DataFrame API only: the same code runs on a standalone cluster and on Spark Connect.
    total = task.spark.range(0, 100_000, 1, 4).selectExpr("sum(id) AS s").collect()[0]["s"]
    task.write_result({"sum": total})
