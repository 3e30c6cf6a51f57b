"""``tasks stats``: every queue's counts, today's processed and failed, totals, and Redis's own figures."""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues.engine import STATES, QueueInfo, QueueNotFoundError, serving
from taskq.queues.engine.inspector import INFO_REFUSED

from . import output as out
from .context import Context
from .parser import command

#: INFO fields worth an operator's glance (asynq's `stats` prints the same handful).
REDIS_FIELDS = (
    "redis_version",
    "redis_mode",
    "uptime_in_seconds",
    "connected_clients",
    "used_memory",
    "used_memory_human",
    "used_memory_peak",
    "used_memory_peak_human",
    "maxmemory",
    "maxmemory_policy",
)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    command(sub, "stats", stats, "Show task counts per state and queue, today's processed/failed, and Redis info.")


def queue_infos(ctx: Context) -> list[QueueInfo]:
    """Info of every queue; a queue deleted between the listing and its read is left out."""
    infos = []
    for name in ctx.inspector.queues():
        try:
            infos.append(ctx.inspector.queue_info(name))
        except QueueNotFoundError:
            continue
    return infos


def redis_info(ctx: Context) -> tuple[dict[str, Any] | None, str]:
    """A few INFO fields, or None and the server's refusal where INFO is forbidden (hardened and managed Redis
    often rename or disable it)."""
    raw = ctx.inspector.redis_info()
    if INFO_REFUSED in raw:
        return None, str(raw[INFO_REFUSED])
    return {name: raw.get(name) for name in REDIS_FIELDS}, ""


def totals(infos: list[QueueInfo]) -> dict[str, Any]:
    doc: dict[str, Any] = {state: sum(getattr(i, state) for i in infos) for state in STATES}
    for name in ("processed_today", "failed_today", "processed_total", "failed_total", "memory_bytes"):
        doc[name] = sum(getattr(i, name) for i in infos)
    doc["size"] = sum(i.size for i in infos)
    doc["queues"] = len(infos)
    doc["paused"] = sum(1 for i in infos if i.paused)
    doc["error_rate_today"] = out.error_rate(doc["processed_today"], doc["failed_today"])
    return doc


def stats(args: argparse.Namespace, ctx: Context) -> out.Output:
    infos = queue_infos(ctx)
    total = totals(infos)
    info, refused = redis_info(ctx)
    unserved = [
        {"queue": i.queue, "pending": i.pending}
        for i in serving.unserved(infos, ctx.inspector.servers(), ctx.inspector.api_served_queues())
    ]
    doc: dict[str, Any] = {
        "queues": [out.queue_doc(i) for i in infos],
        "totals": total,
        "redis": info,
        "unserved": unserved,
    }
    if refused:
        doc["redis_unavailable"] = refused
    return out.Output(doc, render(infos, total, info, unserved, refused))


def warnings(unserved: list[dict[str, Any]]) -> list[str]:
    """A line per queue whose pending tasks no live server will fetch."""
    return [
        f"WARNING: queue {q['queue']} has {q['pending']} pending task{'s' if q['pending'] != 1 else ''} "
        "and no live server reads it"
        for q in unserved
    ]


def render(
    infos: list[QueueInfo],
    total: dict[str, Any],
    info: dict[str, Any] | None,
    unserved: list[dict[str, Any]],
    refused: str = "",
) -> str:
    parts = [*warnings(unserved), *([""] if unserved else [])]
    parts += ["Task Count by State", out.state_table({s: total[s] for s in STATES}), ""]
    parts.append("Task Count by Queue")
    if infos:
        headers = ["QUEUE", "STATE", "SIZE", *(s.upper() for s in STATES)]
        rows = [[i.queue, "paused" if i.paused else "run", i.size, *(getattr(i, s) for s in STATES)] for i in infos]
        parts.append(out.table(headers, rows, numeric=range(2, len(headers))))
    else:
        parts.append("No queues.")
    parts += [
        "",
        "Daily Stats (today, UTC)",
        out.table(
            ["PROCESSED", "FAILED", "ERROR RATE"],
            [[total["processed_today"], total["failed_today"], out.percent(total["error_rate_today"])]],
            numeric=range(3),
        ),
        "",
        "Redis Info",
    ]
    if info is None:
        parts.append(f"INFO is not available on this server (renamed or disabled): {refused}")
    else:
        parts.append(
            out.table(
                ["VERSION", "UPTIME", "CONNECTIONS", "MEMORY USAGE", "PEAK MEMORY USAGE"],
                [
                    [
                        info["redis_version"],
                        out.duration(float(info["uptime_in_seconds"] or 0)),
                        info["connected_clients"],
                        info["used_memory_human"],
                        info["used_memory_peak_human"],
                    ]
                ],
            )
        )
    return "\n".join(parts)
