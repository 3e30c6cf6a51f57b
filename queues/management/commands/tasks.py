"""``python manage.py tasks``: the control CLI (see ``taskq.queues.cli``).

Django's own option parsing is bypassed: ``run_from_argv`` hands everything after ``tasks`` to the CLI's parser,
so ``--json`` may stand anywhere and Django's ``--verbosity`` and friends do not collide with the CLI's options.
"""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from taskq.queues.cli import main


class Command(BaseCommand):
    help = "Inspect and operate queues, tasks and servers: stats, queue ..., task ..., server ls (try --help)."
    # The CLI talks to Redis only: no system checks or migration checks whose output could reach stdout.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def run_from_argv(self, argv: list[str]) -> None:
        for stream in (sys.stdout, sys.stderr):
            # Payloads and errors are arbitrary text: on a terminal that cannot show a character, escape it
            # rather than fail (JSON output is pure ASCII and unaffected).
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(errors="backslashreplace")
        code = main(argv[2:], stdout=sys.stdout, stderr=sys.stderr)
        if code:
            sys.exit(code)

    def print_help(self, prog_name: str, subcommand: str) -> None:
        """``manage.py help tasks`` shows the CLI's own help."""
        main(["--help"], stdout=sys.stdout, stderr=sys.stderr)

    # For call_command("tasks", "queue", "ls"): the arguments go to the CLI unparsed.
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("argv", nargs=argparse.REMAINDER)

    def handle(self, *args: Any, **options: Any) -> None:
        code = main([*args, *options["argv"]], stdout=self.stdout, stderr=self.stderr)
        if code:
            raise CommandError(f"tasks exited with status {code}", returncode=code)
