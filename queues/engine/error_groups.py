"""Reading a queue's error groups: identical failures (one fingerprint, see ``failures``) counted together.

The retry and archive scripts write them (``record_failure`` in ``lua/_lib.lua``); each queue keeps at most
``Limits.error_groups_max`` groups, the least recently seen going first, and drops those unseen for
``Limits.error_groups_max_age``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from .clock import from_ms
from .keys import Keys
from .sans_io import Batch, Command, Flow

FIELDS = ("n", "f", "s", "d")  # count, first seen (ms), latest task id, label (JSON)


@dataclass
class ErrorGroup:
    """One kind of failure of one task type in one queue."""

    queue: str
    fingerprint: str
    task_type: str
    kind: str  # the exception's class name
    message: str  # with numbers and ids masked
    frame: str  # module:function of the innermost frame in the handler's module
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    sample: str  # the id of the latest task that failed so
    sample_exists: bool = True  # whether that task is still in the queue (``Inspector.error_groups`` asks)

    @property
    def search(self) -> str:
        """The search (``search``'s language) for the tasks whose last failure is in this group."""
        return group_search(self.queue, self.task_type, self.fingerprint)


def group_search(queue: str, task_type: str, fingerprint: str) -> str:
    """The search (``search``'s language) for the tasks of a queue and type whose last failure had ``fingerprint``."""
    return f"queue:{_quoted(queue)} type:{_quoted(task_type)} fingerprint:{fingerprint}"


def _quoted(value: str) -> str:
    return '"' + value.replace('"', '\\"') + '"'


def read_flow(keys: Keys, queue: str, task_type: str | None, limit: int) -> Flow:
    """The queue's error groups (of ``task_type`` only, when given), the most recently seen first, at most
    ``limit``. Two small round trips: the index, then the groups."""
    q = keys.queue(queue)
    (seen,) = yield Batch([Command("zrevrange", (q.errors_seen, 0, -1), {"withscores": True})])
    members = []
    for raw, score in seen:
        fingerprint, _, member_type = raw.decode().partition("|")
        if task_type is None or member_type == task_type:
            members.append((raw.decode(), fingerprint, member_type, score))
    members = members[:limit]
    if not members:
        return []
    (values,) = yield Batch([Command("hmget", (q.errors, *[f"{n}|{m[0]}" for m in members for n in FIELDS]))])
    groups = []
    for i, (_member, fingerprint, member_type, score) in enumerate(members):
        count, first, sample, label = values[i * len(FIELDS) : (i + 1) * len(FIELDS)]
        about = _label(label)
        groups.append(
            ErrorGroup(
                queue=queue,
                fingerprint=fingerprint,
                task_type=member_type,
                kind=about.get("kind", "?"),
                message=about.get("message", ""),
                frame=about.get("frame", ""),
                count=int(count or 0),
                first_seen=from_ms(int(first or 0)),
                last_seen=from_ms(int(score)),
                sample=(sample or b"").decode(),
            )
        )
    return groups


def _label(raw: bytes | None) -> dict[str, str]:
    """A group's label as written by ``Failure.label``; an unreadable one reads as empty, not as an error."""
    try:
        about = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return {k: str(v) for k, v in about.items()} if isinstance(about, dict) else {}
