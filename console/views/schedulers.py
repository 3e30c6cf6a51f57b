"""The schedulers page: every periodic entry (from running schedulers and the admin) with its next five runs, its
paused state and its latest runs (a sparkline of their outcomes, and a table), and the schedulers whose heartbeat
is current; operators run an entry now, pause it and resume it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from taskq.queues.audit import record_action
from taskq.queues.engine import FailedPreconditionError
from taskq.queues.engine.periodic import EntryNotFoundError
from taskq.queues.periodic_sync import scheduler_store
from taskq.queues.redaction_access import masked
from taskq.queues.rendering import preview

from ..access import operator_action, viewer_page
from ..charts import Run, run_sparkline
from ..errors import not_found
from ..page_render import render
from .common import inspector, on_asynq

HISTORY_ROWS = 20  # latest runs shown per entry; `tasks cron history ENTRY` shows up to the cap
SPARK_RUNS = 30  # latest runs the sparkline draws


def _sparkline(history: list[Any]) -> Any:
    runs = [
        Run(
            h.outcome,
            h.ran,
            f"{h.tick:%Y-%m-%d %H:%M:%S} UTC: {h.outcome}" + (f", ran {h.ran:.3f}s" if h.ran is not None else ""),
        )
        for h in reversed(history[:SPARK_RUNS])
    ]
    tally = Counter(h.outcome for h in history[:SPARK_RUNS])
    summary = ", ".join(f"{n} {outcome}" for outcome, n in tally.most_common())
    return run_sparkline(runs, title=f"latest {len(runs)} runs: {summary}" if runs else "no runs yet")


@viewer_page
def schedulers(request: HttpRequest) -> HttpResponse:
    """Access: viewers (operators also get the actions). Reads the scheduler heartbeats, the admin's mirrored
    entries, and per entry its last tick, paused state and history (one pipeline for the entries, one read per
    entry for its history, one pipeline for which of the tasks they enqueued still exist)."""
    store = scheduler_store()
    rows = []
    enqueued: list[tuple[str, str]] = []
    for info in store.entries():
        entry = info.entry
        history = store.history_of(entry, max(HISTORY_ROWS, SPARK_RUNS))
        enqueued += [(entry.queue, h.task_id) for h in history[:HISTORY_ROWS] if h.outcome != "duplicate"]
        rows.append(
            {
                "info": info,
                "entry": entry,
                "payload": preview(masked(entry.type, entry.payload), 120),
                "history": history[:HISTORY_ROWS],
                "sparkline": _sparkline(history),
            }
        )
    # The tasks a cron entry enqueued are often gone (deleted on success): one pipeline says which still exist.
    context: dict[str, Any] = {
        "rows": rows,
        "schedulers": store.schedulers(),
        "existing": inspector().existing_tasks(enqueued),
    }
    if on_asynq():
        # A Go scheduler's entries are defined, run and paused in its own code: no Run, Pause or Resume here (the
        # page says so in one line; the actions themselves are refused by the asynq scheduler store).
        context["can_operate"] = False
    return render(request, "taskq/schedulers.html", context)


#: What each action on an entry did, as the message after it says (a run now: by what ``run_now`` returned).
DONE = {
    "pause": "paused: no scheduler enqueues it from its next tick on",
    "resume": "resumed: it runs from its next tick on",
    "enqueued": "run now: enqueued {task_id}",
    "duplicate": "not run: an earlier run of this unique entry still holds its lock",
    "exists": "not run again: {task_id} was enqueued a moment ago",
}


@operator_action
def entry_action(request: HttpRequest, entry_id: str, action: str) -> HttpResponse:
    """Run an entry now, pause or resume it, audited as ``<action>_cron_entry``. An unknown entry is a 404 page and
    changes nothing; pausing a paused entry (or resuming a running one: another operator was first) is said in a
    message, as nothing changed."""
    store = scheduler_store()
    try:
        entry = store.entry(entry_id).entry
    except EntryNotFoundError as exc:
        return not_found(request, exc.message)
    actor = f"console:{request.user.get_username()}"
    task_ids: list[str] = []
    outcome = action
    try:
        if action == "run":
            task_id, outcome = store.run_now(entry, actor)
            task_ids = [task_id]
        elif action == "pause":
            store.pause(entry, actor)
        else:
            store.resume(entry)
    except FailedPreconditionError as exc:
        messages.warning(request, f"Entry {entry.id}: {exc.message}; nothing changed.")
    else:
        detail = f"entry {entry.id}" + (f": {outcome}" if action == "run" else "")
        record_action(request.user, f"{action}_cron_entry", queue=entry.queue, task_ids=task_ids, detail=detail)
        said = f"Entry {entry.id} ({entry.type}) " + DONE[outcome].format(task_id=task_ids[0] if task_ids else "")
        (messages.success if outcome in ("enqueued", action) else messages.warning)(request, said + ".")
    return redirect(reverse("taskq:schedulers") + f"#entry-{entry.id}")
