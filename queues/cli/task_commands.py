"""``tasks task ls|inspect|cancel|delete|archive|run|deleteall|runall|archiveall|enqueue``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from taskq.queues.conf import taskq_settings
from taskq.queues.engine import STATES, TaskInfo
from taskq.queues.engine.inspector import ARCHIVABLE, DELETABLE, RUNNABLE
from taskq.queues.engine.quoting import shown
from taskq.queues.redaction_access import is_redacted, record_unredacted_view, redact_task
from taskq.queues.rendering import retries_text

from . import output as out
from .context import Context, actor, audited
from .parser import (
    base64_bytes,
    command,
    group,
    json_value,
    non_negative_int,
    non_negative_seconds,
    positive_int,
    positive_seconds,
)

PAYLOAD_WIDTH = 40


def register(sub: argparse._SubParsersAction[Any]) -> None:
    task = group(sub, "task", "Manage tasks.")

    ls = command(task, "ls", list_tasks, "List one page of the tasks of a queue in a state.")
    queue_option(ls)
    ls.add_argument("--state", required=True, choices=STATES, help="task state")
    ls.add_argument("--page", type=positive_int, default=1, help="page number, from 1 (default 1)")
    ls.add_argument("--size", type=positive_int, default=20, help="tasks per page, at most 1000 (default 20)")
    unredacted_option(ls)

    unredacted_option(one_task(task, "inspect", inspect, "Show everything known about a task."))
    one_task(task, "cancel", cancel, "Ask the worker running an active task to cancel it.")
    one_task(
        task,
        "delete",
        action("delete_task", "deleted"),
        "Delete a task (not an active one). Tasks waiting for it are archived, as when it fails.",
    )
    one_task(task, "archive", action("archive_task", "archived"), "Archive a pending, scheduled or retry task.")
    one_task(
        task,
        "run",
        action("run_task", "run"),
        "Run a scheduled, retry, archived or waiting task now (a waiting one without its dependencies).",
    )

    for name, method, allowed, verb in (
        ("deleteall", "delete_all", DELETABLE, "Deleted"),
        ("runall", "run_all", RUNNABLE, "Queued to run"),
        ("archiveall", "archive_all", ARCHIVABLE, "Archived"),
    ):
        states = [s for s in STATES if s in allowed]
        bulk = command(
            task, name, bulk_action(method, verb), f"{verb} every task of a queue in one state ({', '.join(states)})."
        )
        queue_option(bulk)
        bulk.add_argument("--state", required=True, choices=states, help="task state")

    register_enqueue(task)


def queue_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    if required:
        parser.add_argument("--queue", required=True, help="queue name")
    else:
        parser.add_argument("--queue", default="default", help="queue name (default: default)")


def one_task(
    sub: argparse._SubParsersAction[Any], name: str, run: Callable[..., out.Output], help_text: str
) -> argparse.ArgumentParser:
    parser = command(sub, name, run, help_text)
    parser.add_argument("id", metavar="ID", help="task id")
    queue_option(parser)
    return parser


def unredacted_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unredacted", action="store_true", help="show values TASKS_REDACT masks in full (written to the audit log)"
    )


def register_enqueue(sub: argparse._SubParsersAction[Any]) -> None:
    parser = command(sub, "enqueue", enqueue, "Enqueue a task; prints its id.")
    parser.add_argument("type", metavar="TYPE", help="task type, e.g. email:deliver")
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument("--payload", type=json_value, metavar="JSON", help="payload as a JSON document")
    payload.add_argument("--payload-base64", type=base64_bytes, metavar="B64", help="raw payload bytes, base64")
    queue_option(parser, required=False)
    parser.add_argument("--id", dest="task_id", metavar="ID", help="task id (default: a random one)")
    parser.add_argument("--max-retry", type=non_negative_int, metavar="N", help="retries before archiving")
    parser.add_argument("--timeout", type=positive_seconds, metavar="S", help="seconds an attempt may run")
    parser.add_argument("--process-in", type=non_negative_seconds, metavar="S", help="run in S seconds")
    parser.add_argument(
        "--unique", type=positive_seconds, metavar="S", help="refuse duplicates (same type and payload) for S seconds"
    )
    parser.add_argument(
        "--retention",
        type=non_negative_seconds,
        metavar="S",
        help="keep the task as completed for S seconds after success",
    )


# -- commands --------------------------------------------------------------------------------------------------


def as_printed(args: argparse.Namespace, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """The tasks as the command may print them: masked by TASKS_REDACT, or with ``--unredacted`` in full and
    an audit entry naming the login and the tasks that had masked values."""
    if not args.unredacted:
        return [redact_task(t) for t in tasks]
    revealed = [t.id for t in tasks if is_redacted(t)]
    if revealed:
        record_unredacted_view(None, args.queue, revealed, f"cli task {args.command_name}", username=actor())
    return tasks


def list_tasks(args: argparse.Namespace, ctx: Context) -> out.Output:
    tasks = as_printed(args, ctx.inspector.list_tasks(args.queue, args.state, page=args.page, size=args.size))
    doc = {
        "queue": args.queue,
        "state": args.state,
        "page": args.page,
        "size": args.size,
        "tasks": [out.task_doc(t) for t in tasks],
    }
    if not tasks:
        text = f"No {args.state} tasks in queue {shown(args.queue)}" + (
            f" on page {args.page}." if args.page > 1 else "."
        )
    else:
        headers, row = COLUMNS.get(args.state, COLUMNS["pending"])
        now = ctx.now()
        text = out.table(
            ["ID", "TYPE", "PAYLOAD", *headers],
            [[t.id, t.type, out.cut(out.show_bytes(t.payload), PAYLOAD_WIDTH), *row(t, now)] for t in tasks],
        )
    return out.Output(doc, text)


def _error(task: TaskInfo) -> str:
    """The last line of the error: for a traceback, the exception itself."""
    lines = [line for line in (task.last_error or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "-"


def _waiting_on(task: TaskInfo) -> str:
    """The dependencies a waiting task still waits for; an on_error callback waits for its workflow to fail."""
    if task.workflow_role == "on_error":
        return f"workflow {task.workflow} to fail"
    return ", ".join(task.waiting_on) or "-"


def _ran(task: TaskInfo) -> str:
    """How long the task's last finished attempt ran ("-" when it has none or its start is unknown)."""
    return "-" if task.last_run_seconds is None else out.duration(task.last_run_seconds)


#: Per state: the extra columns after ID, TYPE and PAYLOAD (as asynq's `task ls` varies them).
COLUMNS: dict[str, tuple[list[str], Callable[[TaskInfo, float], list[Any]]]] = {
    "pending": ([], lambda t, now: []),
    "aggregating": ([], lambda t, now: []),
    "waiting": (["WAITING ON"], lambda t, now: [_waiting_on(t)]),
    "active": (["STARTED", "RETRIED"], lambda t, now: [out.when(t.state_since, now), t.retried]),
    "scheduled": (["PROCESS AT"], lambda t, now: [out.when(t.next_process_at, now)]),
    "retry": (
        ["NEXT RETRY", "RETRIED", "MAX RETRY", "RAN", "LAST ERROR"],
        lambda t, now: [out.when(t.next_process_at, now), t.retried, t.max_retry, _ran(t), _error(t)],
    ),
    "archived": (
        ["LAST FAILED", "RETRIED", "RAN", "LAST ERROR"],
        lambda t, now: [out.when(t.last_failed_at, now), t.retried, _ran(t), _error(t)],
    ),
    "completed": (
        ["COMPLETED", "RAN", "RESULT", "EXPIRES"],
        lambda t, now: [
            out.when(t.completed_at, now),
            _ran(t),
            out.cut(out.show_bytes(t.result), PAYLOAD_WIDTH),
            out.when(t.expires_at, now),
        ],
    ),
}


def inspect(args: argparse.Namespace, ctx: Context) -> out.Output:
    task = as_printed(args, [ctx.inspector.get_task(args.queue, args.id)])[0]
    return out.Output(out.task_doc(task), render_task(task, ctx.now()))


def render_task(task: TaskInfo, now: float) -> str:
    progress = "-" if task.progress is None else f"{task.progress[0]}/{task.progress[1]}"
    headers = ", ".join(f"{k}={v}" for k, v in sorted(task.headers.items())) or "-"
    text = out.fields(
        [
            ("ID", task.id),
            ("Type", task.type),
            ("Queue", task.queue),
            ("State", task.state),
            ("Payload", out.show_bytes(task.payload)),
            ("Retries", retries_text(task)),
            ("Last error", task.last_error or "-"),
            ("Error group", task.error_fingerprint or "-"),
            ("Last failed", out.when(task.last_failed_at, now)),
            ("Next process", out.when(task.next_process_at, now)),
            ("Timeout", "-" if task.timeout is None else out.duration(task.timeout)),
            ("Deadline", out.when(task.deadline, now)),
            ("Headers", headers),
            ("Created", out.when(task.created_at, now)),
            ("Completed", out.when(task.completed_at, now)),
            ("Ran", _ran(task)),
            ("Result", out.show_bytes(task.result)),
            ("Progress", progress),
            ("Retention", out.duration(task.retention) if task.retention else "-"),
            ("Expires", out.when(task.expires_at, now)),
            ("Unique key", task.unique_key or "-"),
            ("After", ", ".join(task.after) or "-"),
            ("Waiting on", _waiting_on(task) if task.state == "waiting" else "-"),
        ]
    )
    if task.last_traceback:
        lines = [out.printable(line) for line in task.last_traceback.rstrip("\n").split("\n")]  # terminal-safe
        text += "\n\nTraceback of the last failure:\n" + "\n".join(lines)
    return text


def cancel(args: argparse.Namespace, ctx: Context) -> out.Output:
    listeners = ctx.inspector.cancel_task(args.queue, args.id)
    audited("cancel_task", args.queue, [args.id])
    note = "" if listeners else " (no worker is listening: the request was lost; the lease will expire)"
    return out.Output(
        {"id": args.id, "queue": args.queue, "cancel_requested": True, "listeners": listeners},
        f"Requested cancellation of task {shown(args.id)}{note}",
    )


def action(method: str, done: str) -> Callable[[argparse.Namespace, Context], out.Output]:
    def run(args: argparse.Namespace, ctx: Context) -> out.Output:
        getattr(ctx.inspector, method)(args.queue, args.id)
        audited(method, args.queue, [args.id])
        verb = "Queued to run" if done == "run" else done.capitalize()
        return out.Output(
            {"id": args.id, "queue": args.queue, "action": method.removesuffix("_task"), "ok": True},
            f"{verb} task {shown(args.id)} of queue {shown(args.queue)}",
        )

    return run


def bulk_action(method: str, verb: str) -> Callable[[argparse.Namespace, Context], out.Output]:
    def run(args: argparse.Namespace, ctx: Context) -> out.Output:
        count = getattr(ctx.inspector, method)(args.queue, args.state)
        audited(method, args.queue, detail=f"state={args.state}", task_count=count)
        return out.Output(
            {"queue": args.queue, "state": args.state, "action": method, "count": count},
            f"{verb} {count} {args.state} task{'' if count == 1 else 's'} of queue {shown(args.queue)}",
        )

    return run


def enqueue(args: argparse.Namespace, ctx: Context) -> out.Output:
    payload = args.payload_base64 if args.payload_base64 is not None else args.payload
    options = {
        name: getattr(args, name)
        for name in ("queue", "task_id", "max_retry", "timeout", "process_in", "unique", "retention")
        if getattr(args, name) is not None
    }
    if taskq_settings().key_format == "asynq":  # a task for Go asynq servers, written as asynq's client writes it
        if "unique" in options:
            options["unique_ttl"] = options.pop("unique")
        info = ctx.asynq_client.enqueue(args.type, payload, **options)
    else:
        info = ctx.client.enqueue(args.type, payload, **options)
    return out.Output(out.task_doc(info), info.id)
