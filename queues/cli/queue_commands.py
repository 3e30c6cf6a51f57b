"""``tasks queue ls|inspect|history|pause|resume|rm``."""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues.engine import STATES, QueueInfo
from taskq.queues.engine.policies import QueueSpec
from taskq.queues.engine.quoting import shown

from . import output as out
from .context import Context, audited
from .parser import command, group, positive_int
from .stats_commands import queue_infos


def register(sub: argparse._SubParsersAction[Any]) -> None:
    queue = group(sub, "queue", "Manage queues.")
    command(queue, "ls", list_queues, "List queues with their size and state.")
    command(
        queue,
        "inspect",
        inspect,
        "Show a queue's counts per state, latency, memory, today's figures and the limits of its definition.",
    ).add_argument("queue", metavar="QUEUE")
    history_parser = command(queue, "history", history, "Show processed and failed counts per day (UTC).")
    history_parser.add_argument("queue", metavar="QUEUE")
    history_parser.add_argument("--days", type=positive_int, default=7, help="days back, today included (1-90)")
    command(queue, "pause", pause, "Pause a queue: workers stop taking its tasks.").add_argument(
        "queue", metavar="QUEUE"
    )
    command(queue, "resume", resume, "Resume a paused queue.").add_argument("queue", metavar="QUEUE")
    rm = command(queue, "rm", remove, "Delete a queue; refused while it holds tasks unless --force.")
    rm.add_argument("queue", metavar="QUEUE")
    rm.add_argument(
        "--force", action="store_true", help="delete the queue's tasks too (still refused while any task is active)"
    )


def list_queues(args: argparse.Namespace, ctx: Context) -> out.Output:
    infos = queue_infos(ctx)
    rows = [
        [
            i.queue,
            "paused" if i.paused else "run",
            i.size,
            i.pending,
            i.active,
            out.duration(i.latency),
            out.size(i.memory_bytes),
            i.processed_today,
            i.failed_today,
        ]
        for i in infos
    ]
    text = (
        out.table(
            ["QUEUE", "STATE", "SIZE", "PENDING", "ACTIVE", "LATENCY", "MEMORY", "PROCESSED", "FAILED"],
            rows,
            numeric=range(2, 9),
        )
        if infos
        else "No queues."
    )
    return out.Output({"queues": [out.queue_doc(i) for i in infos]}, text)


def inspect(args: argparse.Namespace, ctx: Context) -> out.Output:
    info = ctx.inspector.queue_info(args.queue)
    types = ctx.inspector.type_counts(args.queue)
    definition = ctx.inspector.queue_definition(args.queue)
    doc = out.queue_doc(info)
    doc["types"] = types
    if definition is not None:
        doc["concurrency_cap"] = definition.concurrency_cap
        doc["rate_limit"], doc["rate_period"] = definition.rate_limit, definition.rate_period
    return out.Output(doc, render_queue(info, types, definition))


def render_queue(info: QueueInfo, types: dict[str, dict[str, int]], definition: QueueSpec | None = None) -> str:
    limits = (
        []
        if definition is None
        else [("Concurrency cap", definition.concurrency_cap or "none"), ("Rate limit", str(definition.rate))]
    )
    head = out.fields(
        [
            ("Queue", info.queue),
            ("State", "paused" if info.paused else "run"),
            ("Size", info.size),
            ("Latency", out.duration(info.latency)),
            ("Memory", out.size(info.memory_bytes)),
            *limits,
        ]
    )
    parts = [
        head,
        "",
        "Task Count by State",
        out.state_table(info.counts()),
        "",
        "Daily Stats",
        out.table(
            ["", "PROCESSED", "FAILED", "ERROR RATE"],
            [
                [
                    "today",
                    info.processed_today,
                    info.failed_today,
                    out.percent(out.error_rate(info.processed_today, info.failed_today)),
                ],
                [
                    "total",
                    info.processed_total,
                    info.failed_total,
                    out.percent(out.error_rate(info.processed_total, info.failed_total)),
                ],
            ],
            numeric=range(1, 4),
        ),
    ]
    if types:
        columns = [s for s in (*STATES, "processed", "failed") if any(s in c for c in types.values())]
        parts += [
            "",
            "Task Count by Type",
            out.table(
                ["TYPE", *(c.upper() for c in columns)],
                [[name, *(counts.get(c, 0) for c in columns)] for name, counts in sorted(types.items())],
                numeric=range(1, len(columns) + 1),
            ),
        ]
    return "\n".join(parts)


def history(args: argparse.Namespace, ctx: Context) -> out.Output:
    days = ctx.inspector.history(args.queue, days=args.days)
    rates = [out.error_rate(d.processed, d.failed) for d in days]
    rows = [
        {"date": d.date, "processed": d.processed, "failed": d.failed, "error_rate": rate}
        for d, rate in zip(days, rates, strict=True)
    ]
    text = out.table(
        ["DATE (UTC)", "PROCESSED", "FAILED", "ERROR RATE"],
        [[d.date, d.processed, d.failed, out.percent(rate)] for d, rate in zip(days, rates, strict=True)],
        numeric=range(1, 4),
    )
    return out.Output({"queue": args.queue, "days": rows}, text)


def pause(args: argparse.Namespace, ctx: Context) -> out.Output:
    ctx.inspector.pause_queue(args.queue)
    audited("pause_queue", args.queue)
    return out.Output({"queue": args.queue, "paused": True}, f"Paused queue {shown(args.queue)}")


def resume(args: argparse.Namespace, ctx: Context) -> out.Output:
    ctx.inspector.unpause_queue(args.queue)
    audited("resume_queue", args.queue)
    return out.Output({"queue": args.queue, "paused": False}, f"Resumed queue {shown(args.queue)}")


def remove(args: argparse.Namespace, ctx: Context) -> out.Output:
    ctx.inspector.delete_queue(args.queue, force=args.force)
    audited("delete_queue", args.queue, detail="forced" if args.force else "")
    return out.Output({"queue": args.queue, "deleted": True, "force": args.force}, f"Deleted queue {shown(args.queue)}")
