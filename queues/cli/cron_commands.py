"""``tasks cron ls | run | pause | resume | history ENTRY``: periodic entries, what their runs became, and the
operator's actions on them (audited as ``cli:<login>``).

ENTRY is an entry's id, or its name when exactly one entry has that name (several: a usage error naming their
ids). An entry is known while a running scheduler has it (code entries) or the admin defines it.
"""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues.audit import record_action
from taskq.queues.engine.scheduler_store import EnqueueRecord, EntryInfo, SchedulerStore
from taskq.queues.periodic_sync import scheduler_store
from taskq.queues.redaction_access import masked

from . import output as out
from .context import Context, actor
from .parser import command, group, positive_int

ENTRY_HELP = "the entry's id, as 'cron ls' shows it, or its name if no other entry has that name"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    cron = group(sub, "cron", "Inspect and operate periodic (cron) entries.")
    command(cron, "ls", list_entries, "List periodic entries with their next runs, latest run and paused state.")
    run = command(cron, "run", run_entry, "Enqueue a run of an entry now, outside its schedule (paused or not).")
    pause = command(cron, "pause", pause_entry, "Pause an entry: every scheduler stops enqueuing it at its next tick.")
    resume = command(cron, "resume", resume_entry, "Resume a paused entry from its next tick on.")
    history = command(cron, "history", entry_history, "Show the latest runs of one entry and what became of them.")
    for parser in (run, pause, resume, history):
        parser.add_argument("entry", metavar="ENTRY", help=ENTRY_HELP)
    history.add_argument("--limit", type=positive_int, default=50, help="most runs shown, newest first (50)")


def _store() -> SchedulerStore:
    return scheduler_store()


def record_doc(record: EnqueueRecord) -> dict[str, Any]:
    return {
        "tick": out.iso(record.tick),
        "task_id": record.task_id,
        "enqueued_at": out.iso(record.enqueued_at),
        "outcome": record.outcome,
        "ended_at": out.iso(record.ended_at),
        "ran_seconds": record.ran,
        "attempts": record.attempts,
        "manual": record.manual,
    }


def entry_doc(info: EntryInfo) -> dict[str, Any]:
    e = info.entry
    doc: dict[str, Any] = {
        "id": e.id,
        "name": e.name,
        "source": e.source,
        "spec": e.spec,
        "tz": e.tz,
        "type": e.type,
        "queue": e.queue,
    }
    out.put_bytes(doc, "payload", masked(e.type, e.payload))
    doc.update(
        {
            "options": dict(e.options),
            "missed": e.missed,
            "next_run": out.iso(info.next_run),
            "upcoming": [out.iso(when) for when in info.upcoming],
            "previous_run": record_doc(info.previous) if info.previous else None,
            "last_tick": out.iso(info.last_tick),
            "paused": {"at": out.iso(info.paused.at), "by": info.paused.by} if info.paused else None,
            "schedulers": list(info.schedulers),
        }
    )
    return doc


def list_entries(args: argparse.Namespace, ctx: Context) -> out.Output:
    infos = _store().entries()
    now = ctx.now()
    rows = [
        [
            i.id,
            i.entry.name or "-",
            i.entry.spec + ("" if i.entry.tz == "UTC" else f" ({i.entry.tz})"),
            i.entry.type,
            out.show_bytes(masked(i.entry.type, i.entry.payload)),
            i.entry.queue,
            "paused" if i.paused else out.when(i.next_run, now),
            f"{out.when(i.previous.tick, now)} {i.previous.outcome}" if i.previous else "-",
        ]
        for i in infos
    ]
    text = (
        out.table(["ID", "NAME", "SPEC", "TYPE", "PAYLOAD", "QUEUE", "NEXT", "LATEST RUN"], rows)
        if infos
        else "No periodic entries."
    )
    return out.Output({"entries": [entry_doc(i) for i in infos]}, text)


def _audit(action: str, info: EntryInfo, detail: str, task_ids: list[str] | None = None) -> None:
    record_action(None, action, queue=info.entry.queue, task_ids=task_ids, detail=detail, username=actor())


def run_entry(args: argparse.Namespace, ctx: Context) -> out.Output:
    store = _store()
    info = store.resolve(args.entry)
    task_id, status = store.run_now(info.entry, actor())
    _audit("run_cron_entry", info, f"entry {info.id} ({info.entry.type}): {status}", [task_id])
    said = {
        "enqueued": f"Enqueued {task_id} on queue {info.entry.queue}.",
        "duplicate": "Nothing enqueued: an earlier run of this unique entry still holds its lock.",
        "exists": f"Nothing enqueued: {task_id} was enqueued a moment ago.",
    }
    return out.Output({"id": info.id, "task_id": task_id, "status": status}, said[status])


def pause_entry(args: argparse.Namespace, ctx: Context) -> out.Output:
    store = _store()
    info = store.resolve(args.entry)
    store.pause(info.entry, actor())
    _audit("pause_cron_entry", info, f"entry {info.id} ({info.entry.type})")
    return out.Output(
        {"id": info.id, "paused": True}, f"Paused entry {info.id}: no scheduler enqueues it from its next tick on."
    )


def resume_entry(args: argparse.Namespace, ctx: Context) -> out.Output:
    store = _store()
    info = store.resolve(args.entry)
    store.resume(info.entry)
    _audit("resume_cron_entry", info, f"entry {info.id} ({info.entry.type})")
    return out.Output({"id": info.id, "paused": False}, f"Resumed entry {info.id}: it runs from its next tick on.")


def entry_history(args: argparse.Namespace, ctx: Context) -> out.Output:
    store = _store()
    info = store.resolve(args.entry)
    records = store.history_of(info.entry, args.limit)
    now = ctx.now()
    rows = [
        [
            out.when(r.tick, now) + (" (by hand)" if r.manual else ""),
            r.task_id,
            out.when(r.enqueued_at, now),
            r.outcome,
            out.when(r.ended_at, now),
            out.duration(r.ran) if r.ran is not None else "-",
            r.attempts,
        ]
        for r in records
    ]
    text = (
        out.table(["TICK", "TASK ID", "ENQUEUED", "OUTCOME", "ENDED", "RAN", "ATTEMPTS"], rows, numeric=[6])
        if records
        else f"No runs yet for entry {info.id}."
    )
    return out.Output({"id": info.id, "history": [record_doc(r) for r in records]}, text)
