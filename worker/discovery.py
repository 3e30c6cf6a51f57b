"""Finding handlers: each installed Django app's ``tasks`` module, and every module named with ``--import``.
Importing a module runs its ``@handler`` decorators, which register the handlers."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging

from .trace_logs import show_trace_ids


def import_app_tasks(app_modules: list[str]) -> list[str]:
    """Import ``<app>.tasks`` where it exists; an error inside it is raised, not hidden."""
    found = []
    for app in app_modules:
        name = f"{app}.tasks"
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is not None:
            importlib.import_module(name)
            found.append(name)
    return found


def import_modules(names: list[str]) -> list[str]:
    for name in names:
        importlib.import_module(name)
    return list(names)


def import_handlers(app_modules: list[str], imports: list[str]) -> list[str]:
    """What a worker or scheduler command imports at start-up: each app's ``tasks`` module, then ``--import``'s."""
    return import_app_tasks(app_modules) + import_modules(imports)


def add_import_option(parser: argparse.ArgumentParser, defines: str) -> None:
    """``--import MODULE...`` (repeatable): extra modules to import for what they define (``defines``)."""
    parser.add_argument(
        "--import",
        dest="imports",
        nargs="+",
        action="extend",
        default=[],
        metavar="MODULE",
        help=f"extra modules that define {defines}",
    )


def log_to_stderr() -> None:
    """The long-running commands' log format (taskworker, taskscheduler), on stderr."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    show_trace_ids()  # a worker's lines written during an attempt end with its trace and span ids
