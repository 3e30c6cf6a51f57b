"""The workflow page's live snapshot: the whole workflow read again, so the page never needs a reload and never
reads members left of a workflow that has ended.

Every change of a workflow happens in a script that also appends an event of one of its members to the queue's
stream, so the hub reads the workflow again when a window of that queue holds an event of one of its members
(``LiveHub._workflows``), renders the page's live part as the page does (``console/renderers.py``), and sends it
when it changed.
A live page therefore reads as a fresh load of it. The actions (retry, cancel, archive) are rendered per user with
the page; the snapshot says which apply now, and the page shows those.
"""

from __future__ import annotations

from typing import Any

from taskq.queues.engine.errors import QueueNotFoundError, TaskNotFoundError

from ..renderers import render_workflow_live


def workflow_snapshot(inspector: Any, queue: str, workflow_id: str) -> dict[str, Any]:
    """``{"kind": "workflow", "queue", "workflow", "state", "actions", "html", "members"}`` (``members``, the
    member ids, is for the hub to tell which events concern it, not for the page); ``{"gone": True}`` instead of
    the rest once the workflow's record has expired or its queue was deleted."""
    head = {"kind": "workflow", "queue": queue, "workflow": workflow_id}
    try:
        info = inspector.workflow(queue, workflow_id)
    except (TaskNotFoundError, QueueNotFoundError):  # expired, or deleted with its queue
        return {**head, "gone": True}
    return {
        **head,
        "state": info.state,
        "actions": info.actions(),
        "html": render_workflow_live(inspector, queue, info),
        "members": [m.id for m in info.members],
    }
