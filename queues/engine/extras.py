"""taskq's optional features and the extras that bring their packages (pyproject.toml's
``[project.optional-dependencies]``): which packages each needs, whether they are installed, and the named error
that says which extra to install when a feature is used without them.

Whether a package is installed is asked of the import system (``find_spec``) without importing it, so asking costs
nothing and never loads pyspark or pandas into a process that does not use them.
"""

from __future__ import annotations

import importlib.util

from .errors import MissingExtraError

#: Each extra, and the import names of the packages it brings that taskq imports.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "pandas", "pyarrow", "grpc"),
    "rq": ("django_rq", "rq"),
    "postgres": ("psycopg",),
    "django-tasks": ("django_tasks",),
    "uvloop": ("uvloop",),
    "otel": ("opentelemetry",),
}


def install_command(extra: str) -> str:
    """The command that installs ``extra``: ``pip install "taskq[spark]"``."""
    return f'pip install "taskq[{extra}]"'


def missing_modules(extra: str) -> list[str]:
    """The import names of ``extra``'s packages that cannot be imported here (none when it is installed)."""
    return [name for name in EXTRA_MODULES[extra] if not importable(name)]


def importable(name: str) -> bool:
    """Whether the module ``name`` can be imported here (its parent packages are imported to find out)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module blocked by sys.modules[name] = None
        return False


def missing_extra_message(extra: str, feature: str) -> str | None:
    """What to tell someone who uses ``feature`` without ``extra`` installed, or None when it is installed."""
    missing = missing_modules(extra)
    if not missing:
        return None
    return f"{feature}: the {extra} extra is not installed ({', '.join(missing)} missing): {install_command(extra)}"


def require(extra: str, feature: str, *, op: str) -> None:
    """Raise MissingExtraError, naming the extra to install, unless ``extra``'s packages are importable."""
    message = missing_extra_message(extra, feature)
    if message is not None:
        raise MissingExtraError(message, op=op)
