"""``tasks group ls`` (groups of aggregating tasks) and ``tasks workflow show|ls``."""

from __future__ import annotations

import argparse
from typing import Any

from . import output as out
from .context import Context
from .parser import command, group, positive_int


def register(sub: argparse._SubParsersAction[Any]) -> None:
    groups = group(sub, "group", "Groups of aggregating tasks.")
    ls = command(groups, "ls", list_groups, "List a queue's groups with their sizes.")
    ls.add_argument("--queue", required=True, help="queue name")

    workflows = group(sub, "workflow", "Workflows (chains, parallels, chords).")
    show = command(workflows, "show", show_workflow, "Show a workflow: its state and each member's.")
    show.add_argument("workflow_id", metavar="ID")
    show.add_argument("--queue", required=True, help="queue name")
    wls = command(workflows, "ls", list_workflows, "List a queue's workflows, newest first.")
    wls.add_argument("--queue", required=True, help="queue name")
    wls.add_argument("--page", type=positive_int, default=1, help="page number, from 1 (default 1)")
    wls.add_argument("--size", type=positive_int, default=20, help="workflows per page (default 20)")


def list_groups(args: argparse.Namespace, ctx: Context) -> out.Output:
    groups = ctx.inspector.groups(args.queue)
    rows = [[g.name, g.size, out.iso(g.oldest) or "-"] for g in groups]
    text = out.table(["GROUP", "SIZE", "OLDEST"], rows, numeric=[1]) if groups else f"No groups in {args.queue}."
    return out.Output(
        {
            "queue": args.queue,
            "groups": [{"name": g.name, "size": g.size, "oldest": out.iso(g.oldest)} for g in groups],
        },
        text,
    )


def show_workflow(args: argparse.Namespace, ctx: Context) -> out.Output:
    info = ctx.inspector.workflow(args.queue, args.workflow_id)
    members = [
        {"id": m.id, "type": m.type, "role": m.role, "after": m.after, "state": m.state, "error": m.error}
        for m in info.members
    ]
    doc = {
        "id": info.id,
        "queue": info.queue,
        "state": info.state,
        "created": out.iso(info.created_at),
        "finished": out.iso(info.finished_at),
        "failed_member": info.failed_member,
        "error": info.error,
        "members": members,
    }
    head = f"Workflow {info.id} in {info.queue}: {info.state}" + (f" ({info.error})" if info.error else "")
    rows = [[m.id, m.type, m.role, m.state, ",".join(m.after) or "-"] for m in info.members]
    return out.Output(doc, head + "\n\n" + out.table(["ID", "TYPE", "ROLE", "STATE", "AFTER"], rows))


def list_workflows(args: argparse.Namespace, ctx: Context) -> out.Output:
    rows = ctx.inspector.workflows(args.queue, page=args.page, size=args.size)
    text = out.table(["ID", "CREATED"], [[wf, out.iso(at) or "-"] for wf, at in rows]) if rows else "No workflows."
    return out.Output({"queue": args.queue, "workflows": [{"id": wf, "created": out.iso(at)} for wf, at in rows]}, text)
