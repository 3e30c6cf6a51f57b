"""The soak's handlers and its periodic entry: ``bench/soak.py`` starts its worker and its scheduler with
``--import bench.soak_tasks``.

- ``soak:ok`` does nothing (the one-by-one, bulk, scheduled and cron traffic);
- ``soak:flaky`` fails its first attempt on purpose, with ``PROVOKED`` in its error, and succeeds on the retry
  two seconds later: the only errors the soak expects in the worker's log, recognised by that marker;
- ``soak:step`` is a workflow member: it writes its payload as its result, which the chain hands on.

Every task is kept ``SOAK_RETENTION`` seconds once completed (the soak sets it), so the completed tasks of the
run are deleted by the janitor while it runs and after it ends.
"""

from __future__ import annotations

import os
from typing import Any

from taskq import handler, schedule

#: The marker of a provoked failure: the soak's log check ignores an error line only when it carries this.
PROVOKED = "soak-provoked-failure"
RETENTION = float(os.environ.get("SOAK_RETENTION", "60"))
RETRY_SECONDS = 2.0
CRON_QUEUE = "soak-cron"


@handler("soak:ok")
def ok(task: Any) -> None:
    return None


def retry_soon(retried: int, error: BaseException, task: Any) -> float:
    return RETRY_SECONDS


@handler("soak:flaky", max_retry=3, retry_delay=retry_soon)
def flaky(task: Any) -> None:
    if task.retried == 0:
        raise RuntimeError(f"{PROVOKED}: the first attempt of a soak:flaky task fails on purpose")


@handler("soak:step")
def step(task: Any) -> None:
    task.write_result(task.json())


schedule("@every 5s", "soak:ok", queue=CRON_QUEUE, retention=RETENTION, name="soak-cron")
