"""``tasks server ls``: worker servers whose heartbeat is current, and those that ended in the last hour with how
they ended; ``tasks server quiet|stop ID``: ask one to stop fetching, or to shut down gracefully, and wait for it
to acknowledge (audited). Exit status 3 when the request was made but no acknowledgement came within
``--timeout``."""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues.audit import record_action
from taskq.queues.engine import EngineError
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.server_records import ServerRecord

from . import output as out
from .context import Context, actor
from .parser import command, group, non_negative_seconds

#: Seconds ``quiet``/``stop`` wait for the acknowledgement by default: the server acts within milliseconds of
#: the request, or at its next heartbeat (a sixth of the lease, 5 s by default) when it was not listening.
ACK_TIMEOUT = 10.0

#: What the server does once it acknowledged, as the command says.
ACKNOWLEDGED = {
    "quiet": "it fetches no new task, gave back the tasks it had fetched ahead, and finishes the ones it runs",
    "stop": "it is shutting down: running tasks get its shutdown timeout to finish, the rest go back to pending",
}


class NotAcknowledgedError(EngineError):
    """The request was made, but the server did not acknowledge it in time (it may be hung, or cut off)."""

    code = "not_acknowledged"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    server = group(sub, "server", "Inspect and control worker servers.")
    command(server, "ls", list_servers, "List running servers, and those that ended in the last hour.")
    for action, help_text in (
        ("quiet", "Quiet a server: it fetches no new task, requeues what it fetched ahead, finishes what it runs."),
        ("stop", "Stop a server gracefully: running tasks finish or go back to pending, then it exits."),
    ):
        parser = command(server, action, control, help_text)
        parser.add_argument("server_id", metavar="ID", help="the server's id, as `tasks server ls` shows it")
        parser.add_argument(
            "--timeout",
            type=non_negative_seconds,
            default=ACK_TIMEOUT,
            metavar="SECONDS",
            help=f"how long to wait for the server's acknowledgement (default {ACK_TIMEOUT:g}; 0: do not wait); "
            "exit status 3 when none came",
        )


def list_servers(args: argparse.Namespace, ctx: Context) -> out.Output:
    servers = ctx.inspector.servers()
    ended = ctx.inspector.ended_servers()
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
    if ended:
        ended_rows = [
            [r.id, r.how, out.duration(max(0.0, now - r.ended_at.timestamp())) + " ago" if r.ended_at else "-",
             len(r.tasks), r.reason]
            for r in ended
        ]  # fmt: skip
        text += "\n\nEnded in the last hour:\n" + out.table(["ID", "HOW", "ENDED", "TASKS HELD", "WHY"], ended_rows)
    return out.Output({"servers": [out.server_doc(s) for s in servers], "ended": [record_doc(r) for r in ended]}, text)


def record_doc(record: ServerRecord) -> dict[str, Any]:
    """An ended server, for ``--json``: how and when it ended, and what became of each task it held."""
    return {
        **out.server_doc(record.server),
        "how": record.how,
        "reason": record.reason,
        "ended_at": out.iso(record.ended_at),
        "tasks": [
            {"queue": t.queue, "id": t.id, "type": t.type, "outcome": t.outcome, "detail": t.detail,
             "at": out.iso(t.at)}
            for t in record.tasks
        ],
    }  # fmt: skip


def control(args: argparse.Namespace, ctx: Context) -> out.Output:
    action, server_id = args.command_name, args.server_id
    ctx.inspector.control_server(server_id, action)
    record_action(None, f"{action}_server", detail=f"server {server_id}", username=actor())
    if not args.timeout:
        return out.Output(
            {"server": server_id, "requested": action, "acknowledged": None},
            f"Asked server {server_id} to {action} (not waiting for its acknowledgement).",
        )
    ack = ctx.inspector.wait_for_acknowledgement(server_id, action, args.timeout)
    if ack is None:
        raise NotAcknowledgedError(
            f"asked server {shown(server_id)} to {action}, but it did not acknowledge within {args.timeout:g} s; "
            "it acts at its next heartbeat if it is alive (see `tasks server ls`)",
            op=f"tasks server {action}",
        )
    return out.Output(
        {"server": server_id, "requested": action, "acknowledged": ack.action, "acknowledged_at": out.iso(ack.at)},
        f"Server {server_id} acknowledged {action}: {ACKNOWLEDGED[action]}.",
    )
