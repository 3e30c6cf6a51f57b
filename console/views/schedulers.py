"""The schedulers page: every periodic entry (from running schedulers and the admin) with its next and previous
run and its latest enqueues, and the schedulers whose heartbeat is current."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import viewer_page
from ..rendering import preview
from .common import inspector

HISTORY_ROWS = 20  # latest enqueues shown per entry; `tasks cron history ID` shows up to the cap


@viewer_page
def schedulers(request: HttpRequest) -> HttpResponse:
    """Access: viewers. Reads the scheduler heartbeats, the admin's mirrored entries, and per entry its last tick
    and history (one pipeline for the entries, one read per entry for its history, one pipeline for which of
    the tasks they enqueued still exist)."""
    from queues.periodic import scheduler_store
    from queues.redaction import masked

    store = scheduler_store()
    rows = []
    enqueued: list[tuple[str, str]] = []
    for info in store.entries():
        entry = info.entry
        history = store.history_of(entry, HISTORY_ROWS)
        enqueued += [(entry.queue, h.task_id) for h in history if h.outcome != "duplicate"]
        rows.append(
            {
                "info": info,
                "entry": entry,
                "payload": preview(masked(entry.type, entry.payload), 120),
                "history": history,
            }
        )
    # The tasks a cron entry enqueued are often gone (deleted on success): one pipeline says which still exist.
    context = {"rows": rows, "schedulers": store.schedulers(), "existing": inspector().existing_tasks(enqueued)}
    return render(request, "console/schedulers.html", context)
