"""The entry point of ``manage.py tasks``: parse, run one command, print its result or one line of error.

The stdout contract that scripts rely on: on success stdout carries the command's output and nothing else (with
``--json``, exactly one JSON document); on failure stdout is empty, stderr carries one line, and the exit status
is 2 for bad input (usage errors and values the engine refuses), 3 when ``server quiet|stop`` asked but got no
acknowledgement in time, and 1 for everything else (not found, precondition, Redis unreachable, internal
errors). While a command runs, anything else that writes to stdout (a library's print, a stray warning hook) is
sent to stderr so it cannot corrupt the document.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import IO, TypeGuard

from taskq.queues.engine import (
    DuplicateTaskError,
    EngineError,
    FailedPreconditionError,
    LayoutVersionError,
    QueueNotEmptyError,
    QueueNotFoundError,
    RedisUnavailableError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from taskq.queues.engine.quoting import shown

from . import (
    cron_commands,
    export_commands,
    group_commands,
    health_commands,
    layout_commands,
    queue_commands,
    server_commands,
    stats_commands,
    task_commands,
    token_commands,
)
from . import output as out
from .context import Context
from .parser import PROG, Parser, UsageError, json_flag, subcommands, unencodable_argument

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNACKNOWLEDGED = 3  # tasks server quiet|stop: asked, but the server did not acknowledge in time
EXIT_INTERRUPTED = 130

#: How a failed command names what it tried to do: ``cannot <verb> <object>: <reason>``.
VERBS = {
    "rm": "delete",
    "resume": "resume",
    "deleteall": "delete all",
    "runall": "run all",
    "archiveall": "archive all",
}


def build_parser() -> Parser:
    """The whole CLI: every command module registers its nouns and verbs (they import ``parser`` for its helpers,
    never this module)."""
    parser = Parser(prog=PROG, description="Inspect and operate taskq queues, tasks and servers (like asynq's CLI).")
    json_flag(parser, top=True)
    sub = subcommands(parser, "commands")
    stats_commands.register(sub)
    queue_commands.register(sub)
    task_commands.register(sub)
    server_commands.register(sub)
    cron_commands.register(sub)
    token_commands.register(sub)
    group_commands.register(sub)
    health_commands.register(sub)
    layout_commands.register(sub)
    export_commands.register(sub)
    return parser


def main(argv: list[str], stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Run ``tasks <argv>``; returns the exit status. Never raises (except SystemExit from --help's exit 0)."""
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    try:
        with redirect_stdout(stdout), redirect_stderr(stderr):
            args = build_parser().parse_args(argv)
    except UsageError as exc:
        return fail(stderr, f"{exc.prog}: error: {exc} (see '{exc.prog} --help')", EXIT_USAGE)
    except SystemExit as exc:  # --help printed its text and asked to exit
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    unencodable = unencodable_argument(args)
    if unencodable:
        return fail(stderr, f"error: invalid input: {unencodable}", EXIT_USAGE)

    try:
        with redirect_stdout(stderr):
            result = args.run(args, Context())
    except KeyboardInterrupt:
        return fail(stderr, "interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # the contract is one line on stderr, whatever went wrong
        message, code = describe(exc, args)
        return fail(stderr, f"error: {message}", code)

    text = out.dumps(result.doc) if args.json else result.text
    try:
        stdout.write(text + "\n")
        stdout.flush()
    except BrokenPipeError:
        silence(stdout)  # `tasks task ls ... | head`: the reader left; say nothing more
    return EXIT_OK


def fail(stderr: IO[str], message: str, code: int) -> int:
    stderr.write(out.printable(" ".join(message.split())) + "\n")
    stderr.flush()
    return code


def silence(stream: IO[str]) -> None:
    """Point a closed pipe's descriptor at /dev/null so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def target(args: argparse.Namespace) -> str:
    """What the command acted on, for error messages: ``task 'x' in queue 'q'``, ``queue 'q'``, ``periodic entry
    'e'``."""
    if getattr(args, "entry", None) is not None:
        return f"periodic entry {shown(args.entry)}"
    queue = getattr(args, "queue", None)
    if getattr(args, "id", None) is not None:
        return f"task {shown(args.id)} in queue {shown(queue)}"
    if getattr(args, "state", None) is not None:
        return f"{args.state} tasks in queue {shown(queue)}"
    return f"queue {shown(queue)}" if queue is not None else "it"


def refused_action(exc: Exception) -> TypeGuard[EngineError]:
    """An action the engine refused as it stands: a precondition failed, or the keyspace is at another key layout
    (the message names both layouts)."""
    if isinstance(exc, LayoutVersionError):
        return exc.op.startswith("inspector.")
    return isinstance(exc, FailedPreconditionError)


def describe(exc: Exception, args: argparse.Namespace) -> tuple[str, int]:
    """One line naming what went wrong and what to do about it, and the exit status."""
    queue = getattr(args, "queue", None)
    verb = VERBS.get(args.command_name, args.command_name)
    if isinstance(exc, ValidationError):
        return f"invalid input: {exc.message}", EXIT_USAGE
    if isinstance(exc, QueueNotFoundError):
        return (f"queue {shown(queue)} not found" if queue else exc.message), EXIT_ERROR
    if isinstance(exc, TaskNotFoundError):
        return (f"{target(args)} not found" if getattr(args, "id", None) else exc.message), EXIT_ERROR
    if isinstance(exc, QueueNotEmptyError):
        reason = exc.message.split(";")[0]
        hint = "; use --force to delete them too" if not getattr(args, "force", False) else ""
        return f"cannot delete queue {shown(queue)}: {reason}{hint}", EXIT_ERROR
    if refused_action(exc):
        return f"cannot {verb} {target(args)}: {exc.message}", EXIT_ERROR
    if isinstance(exc, TaskIdConflictError):
        return f"a task with id {shown(args.task_id)} already exists in queue {shown(queue)}", EXIT_ERROR
    if isinstance(exc, DuplicateTaskError):
        return (
            f"a unique task of type {shown(args.type)} with the same payload is already in queue {shown(queue)}; "
            f"it was not enqueued again"
        ), EXIT_ERROR
    if isinstance(exc, RedisUnavailableError):
        return exc.message, EXIT_ERROR
    if isinstance(exc, server_commands.NotAcknowledgedError):
        return exc.message, EXIT_UNACKNOWLEDGED
    if isinstance(exc, EngineError):
        return f"{exc.message} ({exc.code})", EXIT_ERROR
    return f"internal error: {type(exc).__name__}: {exc}", EXIT_ERROR
