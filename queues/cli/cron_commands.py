"""``tasks cron ls`` and ``tasks cron history ID``: periodic entries and what they enqueued."""

from __future__ import annotations

import argparse
from typing import Any

from queues.engine.scheduler_store import EnqueueRecord, EntryInfo
from queues.redaction import masked

from . import output as out
from .context import Context
from .parser import command, group, positive_int


def register(sub: argparse._SubParsersAction[Any]) -> None:
    cron = group(sub, "cron", "Inspect periodic (cron) entries.")
    command(cron, "ls", list_entries, "List periodic entries with their next and previous run.")
    history = command(cron, "history", entry_history, "Show the latest enqueues of one periodic entry.")
    history.add_argument("id", metavar="ID", help="the entry id, as 'cron ls' shows it")
    history.add_argument("--limit", type=positive_int, default=50, help="most enqueues shown, newest first (50)")


def _store(ctx: Context) -> Any:
    from queues.periodic import scheduler_store

    return scheduler_store()


def record_doc(record: EnqueueRecord) -> dict[str, Any]:
    return {
        "tick": out.iso(record.tick),
        "task_id": record.task_id,
        "enqueued_at": out.iso(record.enqueued_at),
        "outcome": record.outcome,
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
            "previous_run": record_doc(info.previous) if info.previous else None,
            "last_tick": out.iso(info.last_tick),
            "schedulers": list(info.schedulers),
        }
    )
    return doc


def list_entries(args: argparse.Namespace, ctx: Context) -> out.Output:
    infos = _store(ctx).entries()
    now = ctx.now()
    rows = [
        [
            i.id,
            i.entry.spec + ("" if i.entry.tz == "UTC" else f" ({i.entry.tz})"),
            i.entry.type,
            out.show_bytes(masked(i.entry.type, i.entry.payload)),
            i.entry.queue,
            out.when(i.next_run, now),
            out.when(i.previous.tick, now) if i.previous else "-",
        ]
        for i in infos
    ]
    text = (
        out.table(["ID", "SPEC", "TYPE", "PAYLOAD", "QUEUE", "NEXT", "PREVIOUS"], rows)
        if infos
        else "No periodic entries."
    )
    return out.Output({"entries": [entry_doc(i) for i in infos]}, text)


def entry_history(args: argparse.Namespace, ctx: Context) -> out.Output:
    records = _store(ctx).history(args.id, args.limit)
    now = ctx.now()
    rows = [[out.when(r.tick, now), r.task_id, out.when(r.enqueued_at, now), r.outcome] for r in records]
    text = (
        out.table(["TICK", "TASK ID", "ENQUEUED", "OUTCOME"], rows)
        if records
        else f"No enqueues yet for entry {args.id}."
    )
    return out.Output({"id": args.id, "history": [record_doc(r) for r in records]}, text)
