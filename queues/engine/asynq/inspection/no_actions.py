"""A stand-in for the operator actions over asynq's keys: every action of ``TaskActions`` is refused, changing
nothing, until the part that performs them as asynq's own Inspector does takes its place in the facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from ...inspection.task_actions import TaskActions
from .reads_core import unsupported

_WHAT = "operator actions on asynq keys"


def _refused(name: str) -> Callable[..., NoReturn]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        unsupported(_WHAT, name)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Refused: {_WHAT} are not available here.\n\nRaises:\n    FormatUnsupportedError: always."
    return refuse


class NoActions(TaskActions):
    """Every public method of ``TaskActions`` refused with ``FormatUnsupportedError``; nothing is read or written
    (the facade looks a part's methods up by name)."""


for _name in [name for name in vars(TaskActions) if not name.startswith("_")]:
    setattr(NoActions, _name, _refused(_name))
