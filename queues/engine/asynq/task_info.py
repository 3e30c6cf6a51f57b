"""An asynq task hash read as taskq's ``TaskInfo``, the one snapshot every reader (console, CLI, API) shows.

The mapping is asynq's own (its ``newTaskInfo``): the message gives the type, payload, headers, options, retry
count, last error and completion time (Unix seconds); the hash gives the state, the group, the result and, for a
pending task, since when it waits (``pending_since``, ns). A state's sorted-set score gives the next run
(scheduled, retry), the end of retention (completed) or the lease's expiry (active: its score in ``lease``).
What asynq does not record (creation time, the run time of the last attempt, tracebacks, progress, workflows) is
left unset, never guessed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..message import TaskInfo
from .wire import WireError, WireTask


def from_unix(seconds: float) -> datetime | None:
    """asynq's Unix time (seconds), or None for 0 (unset)."""
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


def task_info(queue: str, task_id: str, fields: dict[bytes, bytes], score: float | None = None) -> TaskInfo:
    """A task from HGETALL of ``asynq:{queue}:t:<id>``; ``score`` is its score in its state's sorted set (for an
    active task, in ``lease``). ``task_id`` is the id of the key read: a ``msg`` that cannot be decoded still gives
    a listed, deletable task, of an unknown type."""
    try:
        message = WireTask.decode(fields.get(b"msg", b""))
    except WireError:
        message = WireTask(type="(undecodable asynq message)")
    state = fields.get(b"state", b"").decode("utf-8", "replace")
    group = fields.get(b"group", b"").decode("utf-8", "replace") or message.group_key
    info = TaskInfo(
        id=message.id or task_id,
        type=message.type,
        queue=message.queue or queue,
        state=state,
        payload=message.payload,
        max_retry=message.retry,
        retried=message.retried,
        timeout=float(message.timeout) if message.timeout else None,
        deadline=from_unix(message.deadline),
        retention=float(message.retention),
        unique_key=(fields.get(b"unique_key") or b"").decode("utf-8", "replace") or message.unique_key or None,
        last_error=message.error_msg or None,
        last_failed_at=from_unix(message.last_failed_at),
        headers=dict(message.headers),
        completed_at=from_unix(message.completed_at),
        result=fields.get(b"result"),
        group=group or None,
    )
    pending_since = fields.get(b"pending_since")
    if score is not None and state in ("scheduled", "retry"):
        info.next_process_at = from_unix(score)
    elif score is not None and state == "completed":
        info.expires_at = from_unix(score)
    elif score is not None and state == "active":
        info.lease_expires_at = from_unix(score)
    if state == "pending" and pending_since:
        info.state_since = datetime.fromtimestamp(int(pending_since) / 1e9, UTC)
        info.next_process_at = info.state_since
    return info
