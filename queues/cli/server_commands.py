"""``tasks server ls``: worker servers whose heartbeat is current."""

from __future__ import annotations

import argparse
from typing import Any

from . import output as out
from .context import Context
from .parser import command, group


def register(sub: argparse._SubParsersAction[Any]) -> None:
    server = group(sub, "server", "Inspect worker servers.")
    command(server, "ls", list_servers, "List running servers with their queues and busy workers.")


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
