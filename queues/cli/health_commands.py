"""``tasks health``: exit 0 when a worker's heartbeat is recent, 1 when there is none or it is too old. For
container healthchecks and monitoring scripts that cannot reach the worker's own ``--health-port``."""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues.engine import EngineError, ServerInfo
from taskq.queues.engine.quoting import shown

from . import output as out
from .context import Context
from .parser import command, positive_seconds


class UnhealthyError(EngineError):
    """No worker heartbeat (of the named server) is recent enough."""

    code = "unhealthy"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = command(sub, "health", health, "Exit non-zero unless a worker's heartbeat is at most --max-age old.")
    parser.add_argument(
        "--max-age",
        type=positive_seconds,
        required=True,
        metavar="SECONDS",
        help="oldest heartbeat that still counts as healthy",
    )
    parser.add_argument(
        "--server",
        metavar="ID",
        default=None,
        help="only this server: its id, or its host name (e.g. a container's $(hostname))",
    )


def health(args: argparse.Namespace, ctx: Context) -> out.Output:
    servers = [s for s in ctx.inspector.servers() if args.server is None or args.server in (s.id, s.host)]
    whom = f"server {shown(args.server)}" if args.server else "any worker"
    if not servers:
        raise UnhealthyError(f"no heartbeat from {whom}", op="tasks health")
    now = ctx.now()
    ages = {s.id: heartbeat_age(s, now) for s in servers}
    fresh = sorted(server_id for server_id, age in ages.items() if age is not None and age <= args.max_age)
    if not fresh:
        known = [age for age in ages.values() if age is not None]
        newest = f"the newest is {out.duration(min(known))} old" if known else "none records its time"
        raise UnhealthyError(f"no heartbeat from {whom} in the last {args.max_age:g} s; {newest}", op="tasks health")
    rows = [
        [s.id, s.host, "-" if ages[s.id] is None else f"{ages[s.id]:.1f}s", "ok" if s.id in fresh else "stale"]
        for s in servers
    ]
    text = out.table(["ID", "HOST", "HEARTBEAT AGE", "STATUS"], rows)
    return out.Output(
        {"healthy": fresh, "servers": [{"id": s.id, "host": s.host, "heartbeat_age": ages[s.id]} for s in servers]},
        text,
    )


def heartbeat_age(server: ServerInfo, now: float) -> float | None:
    """Seconds since the server's last heartbeat; None for a worker too old to record it."""
    return None if server.heartbeat_at is None else max(0.0, now - server.heartbeat_at.timestamp())
