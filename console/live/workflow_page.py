"""The workflow page's live snapshot (issue 23: the page needed reloads, and read "Members left 2 of 5" after its
workflow had ended).

Every change of a workflow happens in a script that also appends an event of one of its members to the queue's
stream, so the hub reads the workflow again when a window of that queue holds an event of one of its members
(``LiveHub._workflows``), renders the page's live part with the page's own template, and sends it when it changed.
A live page therefore reads as a fresh load of it. The actions (retry, cancel, archive) are rendered per user with
the page; the snapshot says which apply now, and the page shows those.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from taskq.queues.engine.errors import QueueNotFoundError, TaskNotFoundError


def workflow_snapshot(inspector: Any, queue: str, workflow_id: str) -> dict[str, Any]:
    """``{"kind": "workflow", "queue", "workflow", "state", "actions", "html", "members"}`` (``members``, the
    member ids, is for the hub to tell which events concern it, not for the page); ``{"gone": True}`` instead of
    the rest once the workflow's record has expired or its queue was deleted."""
    from ..views.workflows import workflow_context

    head = {"kind": "workflow", "queue": queue, "workflow": workflow_id}
    try:
        info = inspector.workflow(queue, workflow_id)
    except (TaskNotFoundError, QueueNotFoundError):  # expired, or deleted with its queue
        return {**head, "gone": True}
    return {
        **head,
        "state": info.state,
        "actions": info.actions(),
        "html": render_to_string("taskq/_workflow_live.html", workflow_context(inspector, queue, info)),
        "members": [m.id for m in info.members],
    }
