"""``python manage.py taskscheduler``: run a periodic-task scheduler (as many as you like, for availability)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError

from taskq.queues import conf
from taskq.queues.engine import LayoutVersionError, ValidationError
from taskq.queues.engine.settings import DEFAULTS
from taskq.worker.discovery import add_import_option, import_handlers, log_to_stderr
from taskq.worker.scheduler import from_settings, run


class Command(BaseCommand):
    help = (
        "Run a periodic-task scheduler: enqueue the entries defined with schedule() in installed apps' tasks.py "
        "and --import modules, and those defined in the admin, at each tick. Run several for availability: "
        "each tick is enqueued once across all of them."
    )

    def add_arguments(self, parser: Any) -> None:
        add_import_option(parser, "periodic entries with schedule()")
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="seconds between rounds "
            f"(default: TASKS_SCHEDULER_INTERVAL, {DEFAULTS.scheduler_interval:g} unless set)",
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=None,
            help="a tick reached later than this many seconds after it was due counts as missed "
            f"(default: TASKS_SCHEDULER_GRACE_SECONDS, {DEFAULTS.scheduler_grace_seconds:g} unless set)",
        )
        parser.add_argument("--no-admin", action="store_true", help="run only the entries defined in code")

    def handle(self, *args: Any, **options: Any) -> None:
        log_to_stderr()
        try:
            # --interval 0 is not given, as it always was: the setting's interval.
            scheduler = from_settings(
                conf.taskq_settings(),
                interval=options["interval"] or None,
                grace=options["grace"],
                follow_admin=not options["no_admin"],
            )
        except ValidationError as exc:
            raise CommandError(str(exc)) from None
        try:
            import_handlers([app.name for app in apps.get_app_configs()], options["imports"])
        except ImportError as exc:
            raise CommandError(f"cannot import periodic entries: {exc}") from None
        except ValidationError as exc:
            raise CommandError(f"bad periodic entry: {exc}") from None
        try:
            run(scheduler)
        except LayoutVersionError as exc:  # exit non-zero, naming both layouts, instead of corrupting the keyspace
            raise CommandError(str(exc)) from None
