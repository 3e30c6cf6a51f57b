"""Reading asynq's tasks: a page of one state, one task, which tasks exist, and error groups, as asynq's Inspector
reads them (``ListPending``... ``GetTaskInfo``): ``TaskReads`` over asynq's keys and its task record (``msg``, a
protobuf message, decoded by ``task_info``).

Pending and active tasks are lists (LPUSH in, the next to run at the tail); an active task's lease expiry is its
score in ``lease``, and it is orphaned once that has passed, as asynq flags it. asynq keeps no event stream and no
records of acted-on tasks: a task's events and record read as none. Error groups are computed from the retry and
archived tasks' last errors (asynq keeps no groups), masked as taskq masks them (``failures``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...error_groups import ErrorGroup
from ...failures import fingerprint, mask_message
from ...inspection.task_reads import TaskEvent, TaskReads
from ...inspection.task_search import SCAN_LIMIT
from ...message import TaskInfo
from ...task_records import TaskRecord
from ...validation import queue_name as checked_queue
from ...validation import task_type as checked_type
from ..keys import AsynqQueueKeys
from ..task_info import task_info
from ..wire import WireError, WireTask

#: Retry and archived tasks whose last errors are grouped, at most, per request (newest first).
ERROR_SCAN_LIMIT = SCAN_LIMIT


def error_fingerprint(error: str) -> str:
    """The error group of an asynq task's last error: its message masked (asynq records no exception class nor
    frame)."""
    return fingerprint("", mask_message(error), "")


@dataclass
class _Seen:
    """One error group as it is gathered: how many tasks, their first and last failure, the latest task."""

    task_type: str
    message: str
    count: int = 0
    first: datetime | None = None
    last: datetime | None = None
    sample: str = ""

    def add(self, task: TaskInfo) -> None:
        self.count += 1
        when = task.last_failed_at
        if when is not None and (self.first is None or when < self.first):
            self.first = when
        if when is not None and (self.last is None or when >= self.last):
            self.last, self.sample = when, task.id
        if not self.sample:
            self.sample = task.id


class AsynqTaskReads(TaskReads):
    """asynq's tasks as they are: ``TaskReads`` over asynq's lists, sorted sets and task hashes."""

    LISTS = ("pending", "active")

    def state_key(self, queue: str, state: str) -> str:
        return AsynqQueueKeys(queue).state(state)

    def score_key(self, queue: str, state: str) -> str:
        q = AsynqQueueKeys(queue)
        return q.lease if state == "active" else q.state(state)

    def task_key(self, queue: str, task_id: str) -> str:
        return AsynqQueueKeys(queue).task(task_id)

    @staticmethod
    def task_info(task_id: str, queue: str, fields: dict[bytes, bytes], score: float | None) -> TaskInfo:
        info = task_info(queue, task_id, fields, score)
        if info.last_error:
            info.error_fingerprint = error_fingerprint(info.last_error)
        return info

    def id_range(self, queue: str, state: str, start: int, stop: int) -> list[tuple[bytes, float | None]]:
        """Ids (with scores) of positions start..stop of a state; an active task's score is its lease's expiry.
        asynq has no waiting tasks: none are listed."""
        if state == "waiting":
            return []
        ids = super().id_range(queue, state, start, stop)
        if state != "active" or not ids:
            return ids
        leases = self.core.send("list_tasks", "zmscore", AsynqQueueKeys(queue).lease, [i for i, _ in ids])
        return [(task_id, lease) for (task_id, _), lease in zip(ids, leases, strict=True)]

    def raw_fields(
        self, op: str, queue: str, ids: list[tuple[bytes, float | None]]
    ) -> list[tuple[bytes, bytes | None, bytes | None] | None]:
        """(type, payload, last error) of each task of ``ids``, from its ``msg`` (None for a task gone since; an
        undecodable message has no type, so no search matches it)."""
        rows = self.core.each(op, "hget", [(self.task_key(queue, task_id.decode()), "msg") for task_id, _ in ids])
        out: list[tuple[bytes, bytes | None, bytes | None] | None] = []
        for raw in rows:
            try:
                message = WireTask.decode(raw) if raw is not None else None
            except WireError:
                message = None
            out.append(
                None if message is None else (message.type.encode(), message.payload, message.error_msg.encode())
            )
        return out

    def error_groups(self, queue: str, task_type: str | None = None, limit: int = 50) -> list[ErrorGroup]:
        """The queue's retry and archived tasks (the newest ``ERROR_SCAN_LIMIT`` of each) grouped by type and masked
        last error, the most recently failed group first, at most ``limit``; each names its latest task, which
        exists (it was just read).

        Raises:
            ValidationError: the queue name or task type is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        checked_queue(queue, "inspector.error_groups")
        if task_type is not None:
            checked_type(task_type, "inspector.error_groups", visible=False)
        seen: dict[str, _Seen] = {}
        for state in ("retry", "archived"):
            ids = self.core.send("error_groups", "zrevrange", self.state_key(queue, state), 0, ERROR_SCAN_LIMIT - 1)
            for task in self.read_tasks("error_groups", queue, [(task_id, None) for task_id in ids]):
                if task.last_error and task.error_fingerprint and task_type in (None, task.type):
                    key = f"{task.error_fingerprint}|{task.type}"
                    seen.setdefault(key, _Seen(task.type, mask_message(task.last_error))).add(task)
        groups = [
            ErrorGroup(queue, key.partition("|")[0], s.task_type, "", s.message, "", s.count, s.first, s.last, s.sample)
            for key, s in seen.items()
        ]
        groups.sort(key=lambda g: g.last_seen.timestamp() if g.last_seen else 0.0, reverse=True)
        return groups[:limit]

    def task_record(self, queue: str, task_id: str) -> TaskRecord | None:
        """None: asynq keeps no record of a deleted task (the queue must exist).

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "task_record", task_id)
        return None

    def task_events(self, queue: str, task_id: str, *_bounds: object, **_where: object) -> list[TaskEvent]:
        """None: asynq writes no event stream, so the bounds of a scan (``TaskReads.task_events``: its limit,
        window and last move) have nothing to bound; a task's last error is on the task itself (the queue must
        exist).

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "task_events", task_id)
        return []
