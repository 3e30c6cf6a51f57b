"""A stand-in for the operator actions over asynq's keys: every action of ``TaskActions`` is refused, changing
nothing, until the part that performs them as asynq's own Inspector does takes its place in the facade.
"""

from __future__ import annotations

from ...inspection.task_actions import TaskActions
from .reads_core import refusing


class NoActions(TaskActions):
    """Every public method of ``TaskActions`` refused with ``FormatUnsupportedError``; nothing is read or written
    (the facade looks a part's methods up by name)."""


refusing(NoActions, [name for name in vars(TaskActions) if not name.startswith("_")], "operator actions on asynq keys")
