"""The handlers of the worker a README reader has running while the examples wait (``taskworker --import
tests.packaging.readme_handlers``): the types the waiting examples wait for. Imported only by that worker
subprocess, so it registers into its global registry."""

from __future__ import annotations

from taskq.queues.engine import Task, handler


@handler("email:deliver")
def deliver(task: Task) -> None:
    task.write_result({"sent": True})


@handler("resize")
def resize(task: Task) -> None:
    task.write_result({"size": task.json()})
