"""``tasks migrate-keys``: bring the Redis keyspace to the key layout of this release (see ``engine.migration``)."""

from __future__ import annotations

import argparse
from typing import Any

from taskq.queues import conf, key_format
from taskq.queues.engine.migration import migrate_keys

from .context import Context
from .output import Output
from .parser import command


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = command(
        sub,
        "migrate-keys",
        migrate,
        "Bring the keyspace to this release's key layout (stop the workers first); idempotent.",
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would change and change nothing")


def migrate(args: argparse.Namespace, ctx: Context) -> Output:
    # taskq's key layout, scanned and stamped under TASKS_KEY_PREFIX: nothing of it belongs in an asynq Redis.
    key_format.refuse_taskq_writes(conf.taskq_settings(), "tasks migrate-keys", "cli.migrate_keys")
    report = migrate_keys(ctx.inspector.broker, dry_run=args.dry_run)
    before = "unstamped" if report.before is None else f"layout {report.before}"
    if not report.changed:
        text = f"Keyspace already at key layout {report.after}; nothing to change."
    elif args.dry_run:
        text = "\n".join(
            [
                f"Dry run: keyspace {before}; would bring it to layout {report.after}:",
                *(f"  {line}" for line in report.changes),
                "Nothing was changed.",
            ]
        )
    else:
        text = "\n".join([f"Keyspace {before} -> layout {report.after}:", *(f"  {line}" for line in report.changes)])
    return Output(report.doc(), text)
