"""What "one module identity" means, measured in a live process: no file of taskq is loaded under two module names.

Two names for one file would be two modules, each with its own globals: two handler registries, two settings
caches, two of every class (``isinstance`` failing across them). ``files_under_two_names`` reads ``sys.modules``;
the ``identity:probe`` handler reports it from inside a running worker (``taskworker --import tests.module_identity``).
The wheel's test runs the same function's source in an installed project (tests/packaging)."""

from __future__ import annotations

import os
import sys

import taskq
from taskq import Task, handler

#: Where taskq's files are, symlinks resolved: the package and each app (in a checkout, the repository's folders).
APPS = ("queues", "worker", "console", "metrics")


def files_under_two_names() -> dict[str, list[str]]:
    """Each of taskq's files loaded as more than one module, with the names it was loaded under."""
    package = os.path.dirname(os.path.realpath(taskq.__file__))
    roots = tuple(os.path.realpath(os.path.join(package, app)) + os.sep for app in APPS) + (package + os.sep,)
    names: dict[str, list[str]] = {}
    for name, module in list(sys.modules.items()):
        path = os.path.realpath(getattr(module, "__file__", None) or os.devnull)
        if path.startswith(roots):
            names.setdefault(path, []).append(name)
    return {path: sorted(found) for path, found in names.items() if len(found) > 1}


@handler("identity:probe", queue="identity")
def probe(task: Task) -> None:
    loaded = sum(1 for module in list(sys.modules.values()) if (getattr(module, "__name__", "")).startswith("taskq."))
    task.write_result({"twice": files_under_two_names(), "taskq_modules": loaded})
