"""Reading tasks: a page of one state (``list_tasks``), one task (``get_task``), which tasks still exist, a
task's transitions from its queue's event stream (``TaskEvent``), and a queue's error groups.

A list is one range read and one pipeline of hashes, however long the queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .. import validation as check
from ..clock import from_ms
from ..error_groups import ErrorGroup
from ..error_groups import read_flow as read_error_groups
from ..errors import TaskNotFoundError, ValidationError
from ..keys import STATES
from ..message import TaskInfo
from ..quoting import shown
from ..sans_io import Command
from ..task_records import TaskRecord
from .event_scan import entry_at, moment_end, scan_back
from .groups_workflows import Groups
from .inspector_core import MAX_PAGE_SIZE, InspectorCore

EVENT_SCAN_LIMIT = 20_000  # stream entries searched, at most, for one task's history
#: Dependencies checked per waiting task of a list (a task may wait for up to 1000); its own page checks all.
WAITING_ON_LISTED = 20


@dataclass
class TaskEvent:
    """One transition of a task, from its queue's event stream."""

    id: str
    type: str
    from_state: str
    to_state: str
    at: datetime | None
    worker: str
    error: str
    lease: str = ""  # the attempt's lease token, on the event of a start
    stream_id: str = ""  # where it is in the queue's event stream (or was, once exported)
    started: datetime | None = None  # on the event of an attempt's end: when its handler started
    trace: str = ""  # on an operator's action: the trace id of the operator's request (operator_trace.py)


class TaskReads:
    """Tasks as they are: lists, one task, their history. Aggregating tasks are listed group by group, so this
    reads the groups (``Groups.groups``)."""

    def __init__(self, core: InspectorCore, groups: Groups) -> None:
        self.core = core
        self.keys = core.keys
        self.groups = groups

    def list_tasks(
        self, queue: str, state: str, page: int = 1, size: int = 20, group: str | None = None
    ) -> list[TaskInfo]:
        """One page of a state, newest first for archived and completed, next-to-run first for pending,
        scheduled and retry, soonest lease expiry first for active. Aggregating tasks are listed group by group
        (oldest first), or of one ``group``; waiting tasks (see ``workflows``) oldest first.

        Raises:
            ValidationError: the queue name or group is malformed, the state unknown, or ``page``/``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "list_tasks")
        op = "inspector.list_tasks"
        if state not in STATES:
            raise ValidationError(f"unknown state {shown(state)}; one of {', '.join(STATES)}", op=op)
        page, size = self.core.paged(op, page, size)
        start, stop = (page - 1) * size, page * size - 1
        if state == "aggregating":
            return self.list_aggregating(queue, group, start, stop)
        return self.hydrate(queue, self.id_range(queue, state, start, stop))

    def list_tasks_after(
        self, queue: str, state: str, size: int, after: tuple[float, str] | None = None
    ) -> tuple[list[TaskInfo], tuple[float, str] | None]:
        """A page of archived or completed tasks, newest first, from the one after ``after`` (the mark a page
        before returned), and the mark of this page's last task when more follow (None at the end). Unlike a page
        number, a mark does not skip or repeat tasks when newer ones arrive between two pages.

        Raises:
            ValidationError: the queue name or state is malformed, or ``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "list_tasks_after")
        op = "inspector.list_tasks_after"
        if state not in ("archived", "completed"):
            raise ValidationError(f"state {shown(state)} is not archived or completed", op=op)
        size = check.count(size, "size", 1, MAX_PAGE_SIZE, op)
        key = self.state_key(queue, state)
        start = 0
        if after is not None:
            score, task_id = after
            held, rank, newer = self.core.batch(
                "list_tasks_after",
                [
                    Command("zscore", (key, task_id)),
                    Command("zrevrank", (key, task_id)),
                    Command("zcount", (key, f"({score!r}", "+inf")),
                ],
            )
            # The marked task still there, where it was: right after it. Gone (respawned, deleted) or moved: after
            # every task newer than it was, which may repeat one archived in the same millisecond.
            start = rank + 1 if held == score and rank is not None else newer
        ids = list(self.core.send("list_tasks_after", "zrevrange", key, start, start + size, withscores=True))
        more = len(ids) > size
        ids = ids[:size]
        mark = (float(ids[-1][1]), ids[-1][0].decode()) if more and ids else None
        return self.hydrate(queue, ids), mark

    def read_tasks(self, op: str, queue: str, ids: list[tuple[bytes, float | None]]) -> list[TaskInfo]:
        """The tasks of ``ids`` (with their scores), read in one round trip; those gone since are left out."""
        hashes = self.core.each(op, "hgetall", [(self.task_key(queue, task_id.decode()),) for task_id, _score in ids])
        return [
            self.task_info(task_id.decode(), queue, fields, score)
            for (task_id, score), fields in zip(ids, hashes, strict=True)
            if fields
        ]

    def hydrate(self, queue: str, ids: list[tuple[bytes, float | None]]) -> list[TaskInfo]:
        """The tasks of ``ids`` as a list shows them: orphans flagged, what waiting tasks still wait on."""
        tasks = [self._flag_orphan(task) for task in self.read_tasks("list_tasks", queue, ids)]
        return self._with_waiting_on(queue, tasks, WAITING_ON_LISTED)

    def _with_waiting_on(self, queue: str, tasks: list[TaskInfo], most: int) -> list[TaskInfo]:
        """Fill ``waiting_on`` of the waiting tasks, checking up to ``most`` dependencies of each: a dependency is
        still awaited while the task is in its dependency set (the script of its success removes the set)."""
        q = self.keys.queue(queue)
        checks = [(task, dep) for task in tasks if task.state == "waiting" for dep in task.after[:most]]
        if not checks:
            return tasks
        awaited_by = self.core.each("list_tasks", "sismember", [(q.dependents(dep), task.id) for task, dep in checks])
        for (task, dep), awaited in zip(checks, awaited_by, strict=True):
            if awaited:
                task.waiting_on.append(dep)
        return tasks

    def _flag_orphan(self, info: TaskInfo) -> TaskInfo:
        if info.lease_expires_at is not None:
            info.orphaned = info.lease_expires_at.timestamp() < self.core.broker.clock.now()
        return info

    def id_range(self, queue: str, state: str, start: int, stop: int) -> list[tuple[bytes, float | None]]:
        """Ids (with scores) of positions start..stop of a state, in the order list_tasks shows them."""
        key = self.state_key(queue, state)
        if state in self.LISTS:
            # LPUSH in, RPOP out: the next to run is at the tail.
            ids: list[bytes] = self.core.send("list_tasks", "lrange", key, -stop - 1, -start - 1)
            return [(task_id, None) for task_id in reversed(ids)]
        if state in ("archived", "completed"):
            return list(self.core.send("list_tasks", "zrevrange", key, start, stop, withscores=True))
        return list(self.core.send("list_tasks", "zrange", key, start, stop, withscores=True))

    def list_aggregating(self, queue: str, group: str | None, start: int, stop: int) -> list[TaskInfo]:
        """Positions start..stop of the queue's aggregating tasks (of ``group`` alone, when given), paged through
        the groups in name order, each oldest first."""
        if group is not None:
            names = [check.task_type(group, "inspector.list_tasks", visible=False)]
        else:
            names = [g.name for g in self.groups.groups(queue)]
        ids: list[tuple[bytes, float | None]] = []
        for name in names:  # page through the groups in name order, each oldest first
            key = self.groups.group_key(queue, name)
            size = int(self.core.send("list_tasks", "zcard", key))
            if start >= size:
                start, stop = start - size, stop - size
                continue
            ids += [(i, None) for i in self.core.send("list_tasks", "zrange", key, start, stop)]
            if stop < size:
                break
            start, stop = 0, stop - size
        return self.read_tasks("list_tasks", queue, ids)

    def get_task(self, queue: str, task_id: str) -> TaskInfo:
        """One task, in whatever state it is.

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            TaskNotFoundError: the queue holds no task with that id.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "get_task", task_id)
        fields = self.core.send("get_task", "hgetall", self.task_key(queue, task_id))
        if not fields:
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(queue)}", op="inspector.get_task")
        state = fields.get(b"state", b"").decode()
        score = None
        if state in ("scheduled", "retry", "completed", "archived", "active"):
            score = self.core.send("get_task", "zscore", self.score_key(queue, state), task_id)
        task = self._flag_orphan(self.task_info(task_id, queue, fields, score))
        return self._with_waiting_on(queue, [task], len(task.after))[0]

    def existing_tasks(self, refs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the (queue, task id) pairs name a task that still exists, read in one pipeline: a page that
        links tasks which may be gone (deleted on success, past their retention) asks once, not per link. A pair
        the engine would refuse (a malformed name or id) names no task.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        wanted = [(queue, task_id) for queue, task_id in dict.fromkeys(refs) if _well_formed(queue, task_id)]
        found = self.core.each("existing_tasks", "exists", [(self.task_key(q, t),) for q, t in wanted])
        return {ref for ref, exists in zip(wanted, found, strict=True) if exists}

    def raw_fields(
        self, op: str, queue: str, ids: list[tuple[bytes, float | None]]
    ) -> list[tuple[bytes, bytes | None, bytes | None] | None]:
        """(type, payload, last error) of each task of ``ids`` as stored, undecoded, in one round trip (None for a
        task gone since): what a search filters on without building every TaskInfo."""
        rows = self.core.each(
            op, "hmget", [(self.task_key(queue, task_id.decode()), "type", "payload", "error") for task_id, _ in ids]
        )
        return [None if ttype is None else (ttype, payload, error) for ttype, payload, error in rows]

    # The layout's own keys and record, which asynq's layout gives otherwise (``asynq/inspection``).

    #: The states kept in lists (the others are sorted sets).
    LISTS: tuple[str, ...] = ("pending",)

    def state_key(self, queue: str, state: str) -> str:
        """The list or sorted set of a state's tasks."""
        return self.keys.queue(queue).state_key(state)

    def score_key(self, queue: str, state: str) -> str:
        """The sorted set that scores a task of ``state`` (its next run, its expiry, its lease)."""
        return self.keys.queue(queue).state_key(state)

    def task_key(self, queue: str, task_id: str) -> str:
        """The hash of one task."""
        return self.keys.queue(queue).task(task_id)

    @staticmethod
    def task_info(task_id: str, queue: str, fields: dict[bytes, bytes], score: float | None) -> TaskInfo:
        """A task from its hash, and its score in the sorted set of its state."""
        return TaskInfo.from_hash(task_id, queue, fields, score)

    def error_groups(self, queue: str, task_type: str | None = None, limit: int = 50) -> list[ErrorGroup]:
        """The queue's error groups (of ``task_type`` only, when given), the most recently seen first, at most
        ``limit``; each says whether its sample task still exists.

        Raises:
            ValidationError: the queue name or task type is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        check.queue_name(queue, "inspector.error_groups")
        if task_type is not None:
            check.task_type(task_type, "inspector.error_groups", visible=False)
        groups: list[ErrorGroup] = self.core.drive(
            "error_groups", read_error_groups(self.keys, queue, task_type, limit)
        )
        existing = self.existing_tasks((queue, group.sample) for group in groups)
        for group in groups:
            group.sample_exists = (queue, group.sample) in existing
        return groups

    def task_record(self, queue: str, task_id: str) -> TaskRecord | None:
        """The record a deleted task left because an operator had acted on it (``task_records.py``), while it is
        kept; None for any other task, or once the record expired.

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "task_record", task_id)
        key = self.keys.queue(queue).task_record(task_id)
        raw, ttl = self.core.batch("task_record", [Command("get", (key,)), Command("pttl", (key,))])
        if raw is None:
            return None
        now = datetime.fromtimestamp(self.core.broker.clock.now(), UTC)
        return TaskRecord.parse(queue, task_id, raw, ttl, now)

    def task_events(
        self,
        queue: str,
        task_id: str,
        scan_limit: int = EVENT_SCAN_LIMIT,
        *,
        window: tuple[int, int] | None = None,
        last_move: int | None = None,
    ) -> list[TaskEvent]:
        """The task's transitions, oldest first, from its queue's stream: at most ``scan_limit`` entries are read.

        The scan goes newest first and stops at the task's creation (the only kind of event with no ``from``
        state): nothing older is about this task. ``window`` (epoch ms, ``timeline.event_window`` of the task's
        creation and last move) bounds it further: when the stream's oldest entry is later than the window, the
        stream holds none of the task's events and nothing is scanned; the scan also stops at the first entry timed
        before the window. ``last_move`` (epoch ms: the task's ``since``, exactly as its hash holds it) is where the
        scan starts: the event of a task's last move is timed exactly then (the script that moves it writes both),
        so ``event_scan.moment_end`` finds it in a few round trips, and the queue's traffic since (up to the whole
        stream, for a task that has waited in a busy queue) is not read. When the newest event read is not that
        move (hosts' clocks apart), the scan starts at the stream's newest entry, as without it.

        Raises:
            ValidationError: the queue name or task id is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "task_events", task_id)
        stream = self.keys.queue(queue).events

        def read(commands: list[Command]) -> list[Any]:
            return self.core.batch("task_events", commands)

        if window is not None and entry_at(self.core.send("task_events", "xrange", stream, count=1), 0) > window[1]:
            return []
        earliest = window[0] if window is not None else 0
        end = moment_end(read, stream, last_move) if last_move is not None else None
        if end is not None:
            found = scan_back(read, stream, task_id, end, earliest, scan_limit)
            if found and found[-1][1].get(b"at") == str(last_move).encode():
                return [_event(fields, entry_id.decode()) for entry_id, fields in found]
        found = scan_back(read, stream, task_id, "+", earliest, scan_limit)
        return [_event(fields, entry_id.decode()) for entry_id, fields in found]


def _event(fields: dict[bytes, bytes], stream_id: str = "") -> TaskEvent:
    def text(name: bytes) -> str:
        return fields.get(name, b"").decode("utf-8", "replace")

    at = fields.get(b"at")
    return TaskEvent(
        text(b"id"),
        text(b"type"),
        text(b"from"),
        text(b"to"),
        from_ms(int(at)) if at else None,
        text(b"worker"),
        text(b"error"),
        text(b"lease"),
        stream_id,
        from_ms(int(fields[b"started"])) if fields.get(b"started") else None,
        text(b"trace"),
    )


def _well_formed(queue: str, task_id: str) -> bool:
    try:
        check.queue_name(queue, "inspector.existing_tasks")
        check.task_id(task_id, "inspector.existing_tasks")
    except ValidationError:
        return False
    return True
