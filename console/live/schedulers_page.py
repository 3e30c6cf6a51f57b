"""What the live hub watches of the schedulers page (``/schedulers/``).

The page shows forms with a CSRF token and actions per user, so the hub never renders it: it tells the page when
to read its sections again (``{"kind": "schedulers"}``), and live.js fetches them, as the search page does. The
page changes in two ways. A cron run's task moves (ids ``cron:<entry id>:...``): an event of the queue's stream,
which the hub sees as it reads. Or an entry is paused, resumed, defined, dropped or its next run comes, and a
scheduler starts or stops: these write no event, so the hub compares this fingerprint of them, read with the
dashboard's snapshots, with the one it read before.
"""

from __future__ import annotations

import json
from typing import Any

#: Task ids of the runs of periodic entries start with it (``Entry.task_id``, ``Entry.manual_task_id``).
CRON_TASK_PREFIX = "cron:"


def schedulers_fingerprint(store: Any) -> str:
    """The schedulers page's state beyond its runs' tasks: every entry with its schedulers, next run, newest run
    and pause, and the running schedulers. Raises EngineError when Redis cannot be read."""
    entries = [
        [info.id, info.schedulers, info.next_run, info.previous, info.last_tick, info.paused]
        for info in store.entries()
    ]
    schedulers = [[s.id, s.entry_ids] for s in store.schedulers()]
    return json.dumps([entries, schedulers], default=str, sort_keys=True)
