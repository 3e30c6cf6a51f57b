"""Named errors of the engine. Each carries the operation that raised it and a stable code.

Deliberately shares its name with ``console/errors.py``: this module defines the errors, that one the pages the
console shows for them.
"""

from __future__ import annotations


class OperationError(Exception):
    """An error that names the operation that raised it (``op``, e.g. ``client.enqueue``) and what went wrong
    (``code``, stable: the API and the CLI report it). The engine's errors and the RQ bridge's share it."""

    code = "internal"

    def __init__(self, message: str, *, op: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return f"{self.op}: {self.message}" if self.op else self.message


class EngineError(OperationError):
    """Base class of the engine's errors."""


class ValidationError(EngineError, ValueError):
    """Bad input: nothing was written."""

    code = "invalid_argument"


class PayloadTooDeepError(ValidationError):
    """A payload nests arrays and objects deeper than the limit (``TASKS_MAX_PAYLOAD_DEPTH``)."""


class AlreadyExistsError(EngineError):
    """What the operation would create is there already (the code of both kinds below)."""

    code = "already_exists"


class DuplicateTaskError(AlreadyExistsError):
    """A unique task with the same type and payload holds its lock."""


class TaskIdConflictError(AlreadyExistsError):
    """A task with this id already exists in the queue."""


class NotFoundError(EngineError, LookupError):
    """What the operation names does not exist (the code of the kinds below)."""

    code = "not_found"


class TaskNotFoundError(NotFoundError):
    """No task of that id in that queue."""


class QueueNotFoundError(NotFoundError):
    """No queue of that name."""


class ServerNotFoundError(NotFoundError):
    """No worker server of that id has a current heartbeat."""


class QueueNotEmptyError(EngineError):
    code = "failed_precondition"


class FailedPreconditionError(EngineError):
    """The task is not in a state that allows the operation (e.g. deleting an active task)."""

    code = "failed_precondition"


class LeaseLostError(EngineError):
    """The worker's lease on the task was taken over: its acknowledgement was refused."""

    code = "lease_lost"


class RedisUnavailableError(EngineError, ConnectionError):
    """Redis cannot be reached."""

    code = "unavailable"


class RedisCommandError(EngineError):
    """Redis answered a command with an error reply that names no engine error: e.g. a command the server's
    configuration renamed or disabled (managed Redis often refuses INFO, CONFIG or CLIENT), or a wrong key type."""

    code = "redis_error"


class LayoutVersionError(EngineError):
    """The keyspace is stamped with a key layout this code does not read and write (see ``layout``): nothing was
    written. ``found`` is the keyspace's layout, ``expected`` this code's."""

    code = "layout_mismatch"

    def __init__(self, message: str, *, found: int, expected: int, op: str = "") -> None:
        super().__init__(message, op=op)
        self.found = found
        self.expected = expected


class MessageVersionError(EngineError, ValueError):
    """A task message written by a newer release: this code cannot read it (a ValueError, like any record it
    cannot decode)."""

    code = "unsupported_version"


class FormatUnsupportedError(EngineError):
    """What was asked cannot exist in the keyspace's key format: asynq's (``TASKS_KEY_FORMAT = "asynq"``) has no
    workflows, waiting tasks, fenced acknowledgements, or timelines beyond a task's last error. Nothing was
    changed; the message names what is missing."""

    code = "unsupported_by_format"


class HandlerNotFoundError(EngineError, LookupError):
    """No registered handler takes the task's type (raised where handlers run inline: eager mode)."""

    code = "no_handler"


class TaskCancelledError(EngineError):
    """Raised inside a handler's run when the task was cancelled, timed out or passed its deadline."""

    code = "cancelled"


# Raised by handlers to steer the outcome of a failed attempt.


class SkipRetry(Exception):
    """Raise from a handler to archive the task now, whatever retries are left."""


class RetryWithoutFailure(Exception):
    """Raise from a handler to retry later without counting a failure (e.g. a dependency is warming up)."""


#: Script error codes (the first word of a Lua error reply) mapped to the error raised for them.
SCRIPT_ERRORS: dict[str, type[EngineError]] = {
    "NOT_FOUND": TaskNotFoundError,
    "CONFLICT": TaskIdConflictError,
    "DUPLICATE": DuplicateTaskError,
    "QUEUE_NOT_EMPTY": QueueNotEmptyError,
    "LEASE_LOST": LeaseLostError,
    "PRECONDITION": FailedPreconditionError,
}


class MissingExtraError(EngineError, ImportError):
    """A feature was used whose optional dependencies (a ``taskq[...]`` extra) are not installed; the message says
    which extra to install (``taskq.queues.engine.extras``)."""

    code = "missing_extra"
