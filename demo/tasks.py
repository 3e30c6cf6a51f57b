"""Handlers for the demo traffic of ``make run``: a little of everything the console should show."""

from __future__ import annotations

import asyncio
import random
import time

from taskq.queues.engine import SkipRetry, Task, handler, schedule


@handler("email:deliver", queue="critical", max_retry=3, retention=3600)
def deliver_email(task: Task) -> None:
    time.sleep(random.uniform(0.01, 0.2))
    task.write_result({"delivered_to": task.json().get("to")})


@handler("image:resize", queue="default", timeout=10, retention=600)
async def resize_image(task: Task) -> None:
    steps = 5
    for step in range(steps):
        await asyncio.sleep(random.uniform(0.05, 0.3))
        task.progress(step + 1, steps)


@handler("report:flaky", queue="low", max_retry=2)
def flaky_report(task: Task) -> None:
    """Fails half the time, so the retry and archived tabs have something in them."""
    if random.random() < 0.5:
        raise RuntimeError("upstream report service answered 503")


# A periodic entry of the demo's own, so the Schedulers page has ticks to show within a minute of `make run`.
schedule(
    "@every 30s",
    "email:deliver",
    {"to": "ops@example.com", "subject": "queue digest"},
    queue="critical",
    name="demo: the ops digest, every 30 s",
)


@handler("payment:refund", queue="critical", max_retry=5)
def refund(task: Task) -> None:
    if task.json().get("amount", 0) < 0:
        raise SkipRetry("negative refund amount: not retrying")
