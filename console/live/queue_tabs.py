"""The rows of each watched queue tab, rendered by the hub as the page renders them.

Events say which task moved where, not what its row shows now: a task that failed again reads "retry 2 of 2" with a
new due time, and a task new to a tab has a payload, a due time and a retry count that no event carries. So while a
queue page is open on a tab (one page of one state, unfiltered), the hub reads that page of the tab as a fresh load
reads it (``Inspector.list_tasks``: a range and one pipeline of hashes), renders its rows with the page's own
template (``taskq/_task_rows.html``) and sends them when they changed. It does so in the snapshots' rhythm
(``console/live/dashboard.py``: at most every ``DASHBOARD_INTERVAL`` seconds while events arrive, every
``DASHBOARD_IDLE`` seconds otherwise), once per console process for each tab however many pages show it. The page
swaps them in (``live.js``), so once activity stops its table lists exactly the rows, in the order and with the
cells, of a fresh load.

Rows are rendered with their selection checkbox, which a page without one (a viewer's) drops; payloads are masked
as TASKS_REDACT says, for everyone, as lists always are.
"""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string

from taskq.queues.engine.actions import task_actions_for
from taskq.queues.engine.errors import QueueNotFoundError
from taskq.queues.engine.inspector import WAITING_ON_LISTED
from taskq.queues.redaction_access import masked
from taskq.queues.rendering import preview

from ..forms import STATES

TAB = "tab"  # the hub's key kind: (TAB, queue, state, page, size)
TabKey = tuple[str, ...]
MAX_PAGE = 10_000  # a tab page past this is not followed: its range read would be a deep scan of the state


def tab_key(queue: str, state: str, page: int, size: int) -> TabKey:
    return (TAB, queue, state, str(page), str(size))


def tab_snapshots(inspector: Any, keys: list[TabKey]) -> dict[TabKey, dict[str, Any]]:
    """Per watched tab key: ``{"kind": "tab", "queue", "state", "page", "size", "ids", "rows": "<tr…>"}``, the rows
    of that page of the tab as a fresh load of it renders them. A queue deleted meanwhile has no snapshot."""
    snapshots = {}
    for key in keys:
        _, queue, state, page, size = key
        try:
            tasks = inspector.list_tasks(queue, state, page=int(page), size=int(size))
        except QueueNotFoundError:
            continue
        rows = [(task, preview(masked(task.type, task.payload))) for task in tasks]
        context = {
            "rows": rows,
            "queue": queue,
            "state": state,
            "can_operate": True,
            "row_actions": task_actions_for(state),
            "waiting_on_listed": WAITING_ON_LISTED,
        }
        snapshots[key] = {
            "kind": "tab",
            "queue": queue,
            "state": state,
            "page": int(page),
            "size": int(size),
            "ids": [task.id for task in tasks],
            "rows": render_to_string("taskq/_task_rows.html", context),
        }
    return snapshots


def parse_tab(content: dict[str, Any]) -> tuple[str, int, int] | None:
    """The tab a queue page shows (``{"state", "page", "size"}`` of its subscription), or None when it asks for
    none (a filtered page, whose matches are a bounded scan, is not followed row by row). ValueError says what is
    wrong with one given."""
    tab = content.get("tab")
    if tab is None:
        return None
    if not isinstance(tab, dict):
        raise ValueError('tab must be {"state", "page", "size"}')
    state, page, size = tab.get("state"), tab.get("page"), tab.get("size")
    if state not in STATES:
        raise ValueError(f"tab state must be one of {', '.join(STATES)}")
    if type(page) is not int or not 1 <= page <= MAX_PAGE:
        raise ValueError(f"tab page must be a whole number from 1 to {MAX_PAGE}")
    if type(size) is not int or not 1 <= size <= 1000:
        raise ValueError("tab size must be a whole number from 1 to 1000")
    return state, page, size


class SnapshotDelta:
    """The snapshots that changed since the last round, per key. ``reset(key)`` makes the next round send that
    key's snapshot (a page joined: its watchers' last state may be older than its fresh load)."""

    def __init__(self) -> None:
        self.sent: dict[TabKey, str] = {}

    def reset(self, key: TabKey) -> None:
        self.sent.pop(key, None)

    def __call__(self, snapshots: dict[TabKey, dict[str, Any]]) -> list[tuple[TabKey, dict[str, Any]]]:
        changed = []
        for key, snapshot in snapshots.items():
            encoded = json.dumps(snapshot, sort_keys=True)
            if self.sent.get(key) != encoded:
                self.sent[key] = encoded
                changed.append((key, snapshot))
        for gone in set(self.sent) - set(snapshots):
            del self.sent[gone]
        return changed
