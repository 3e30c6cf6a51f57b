"""Which key format the project's Redis holds (``TASKS_KEY_FORMAT``), and the refusal of what writes taskq's keys.

With ``TASKS_KEY_FORMAT = "asynq"`` the Redis belongs to a Go asynq deployment: the console, the CLI and /metrics read
asynq's keys, and operator actions write them as asynq's Inspector does. Everything that writes taskq's own keys
(the shared ``Client`` and what enqueues through it, the HTTP API's publish and consume, the periodic tasks and
policies mirrored from the admin, the analytics job over the exported event stream) must refuse there, named and
before anything is written, so a taskq key never lands in an asynq Redis. ``refuse_taskq_writes`` is that refusal.
"""

from __future__ import annotations

from .engine.errors import FormatUnsupportedError
from .engine.settings import TaskqSettings

ASYNQ = "asynq"

#: What a live page's indicator says where the console polls (``console/live/polling.py``: once a second).
POLLING_NOTE = "polling every second: asynq's keys carry no event stream"

#: What the console's pages say, in one line each, where something asynq's keys cannot hold would have been.
ABSENT_ON_ASYNQ = {
    "series": "No charts over time: a Go asynq deployment's keys hold no time series.",
    "timeline": "No history before the last error: asynq keeps no record of a task's earlier transitions.",
    "attempts": "No list of attempts: asynq keeps a task's retry count and last error (above), not each attempt.",
    "waiting": "No waiting tasks: asynq has no dependencies between tasks.",
    "workflows": "No workflows: asynq has no dependencies between tasks.",
    "control": "No Quiet or Stop: asynq servers take no commands through Redis (signal the process: TSTP, TERM).",
    "cron": "No Run now, Pause or Resume: a Go scheduler's entries are defined, run and paused in its own code.",
    "history": "No History page: its analytics roll up the event stream, which asynq's keys do not carry.",
}


def on_asynq(settings: TaskqSettings) -> bool:
    """Whether ``settings`` (``conf.taskq_settings()``) say the Redis holds asynq's keys."""
    return settings.key_format == ASYNQ


def refuse_taskq_writes(settings: TaskqSettings, what: str, op: str) -> None:
    """Raise FormatUnsupportedError naming ``what`` when ``settings`` say the Redis holds asynq's keys, before
    anything is written (``conf`` hands its settings in: this module is below it).

    Raises:
        FormatUnsupportedError: ``TASKS_KEY_FORMAT`` is "asynq" (its message names ``what`` and the setting).
    """
    if on_asynq(settings):
        raise FormatUnsupportedError(
            f"{what} writes taskq's own keys, and this Redis holds a Go asynq deployment's "
            f'(TASKS_KEY_FORMAT = "asynq"): nothing was written',
            op=op,
        )
