"""``tasks server ls``: worker servers whose heartbeat is current; ``tasks server quiet|stop ID``: ask one to stop
fetching, or to shut down gracefully (through Redis, at its next heartbeat; audited)."""

from __future__ import annotations

import argparse
from typing import Any

from . import output as out
from .context import Context, actor
from .parser import command, group


def register(sub: argparse._SubParsersAction[Any]) -> None:
    server = group(sub, "server", "Inspect and control worker servers.")
    command(server, "ls", list_servers, "List running servers with their queues and busy workers.")
    command(
        server, "quiet", control, "Quiet a server: it fetches no new task and finishes the ones it runs."
    ).add_argument("server_id", metavar="ID", help="the server's id, as `tasks server ls` shows it")
    command(
        server, "stop", control, "Stop a server gracefully: running tasks finish or go back to pending, then it exits."
    ).add_argument("server_id", metavar="ID", help="the server's id, as `tasks server ls` shows it")


def list_servers(args: argparse.Namespace, ctx: Context) -> out.Output:
    servers = ctx.inspector.servers()
    now = ctx.now()
    rows = []
    for s in servers:
        queues = ", ".join(f"{name}:{weight}" for name, weight in sorted(s.queues.items()))
        if s.strict:
            queues += " (strict)"
        started = out.duration(max(0.0, now - s.started_at.timestamp())) + " ago" if s.started_at else "-"
        rows.append([s.id, s.host, s.pid, s.status, f"{len(s.active)}/{s.concurrency}", queues, started])
    text = (
        out.table(["ID", "HOST", "PID", "STATE", "ACTIVE WORKERS", "QUEUES", "STARTED"], rows, numeric=[2])
        if servers
        else "No running servers."
    )
    return out.Output({"servers": [out.server_doc(s) for s in servers]}, text)


def control(args: argparse.Namespace, ctx: Context) -> out.Output:
    from queues.audit import record_action

    action = args.command_name
    ctx.inspector.control_server(args.server_id, action)
    record_action(None, f"{action}_server", detail=f"server {args.server_id}", username=actor())
    return out.Output(
        {"server": args.server_id, "requested": action},
        f"Asked server {args.server_id} to {action} (it acts at its next heartbeat).",
    )
