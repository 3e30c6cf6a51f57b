"""An operator's actions on an asynq deployment's queues and tasks, done as asynq's own ``Inspector`` does them
(``internal/rdb/inspect.go`` of asynq v0.26), so Go servers honour them: pause, unpause and delete a queue; run,
archive, delete, edit or cancel one task; run, archive, delete or cancel every task of a state or of an aggregating
group.

Every state change is one script of ``lua/inspect_*.lua`` with asynq's preconditions and outcomes. asynq runs a
bulk action as one script over the whole state; here it runs a chunk a call until a call moves nothing, which
leaves the same keys without holding Redis for a whole state at once. A cancellation is asynq's: the task's id
published on ``asynq:cancel``, and the Go (or taskq) server running it cancels its handler.

asynq's keys record no actor (there is no event stream in its layout): each action takes the ``actor`` as
``TaskActions`` does, and the audit of who did what is the record the console, the admin and the CLI write beside
the action (``queues/audit.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from ... import validation as check
from ...errors import (
    FailedPreconditionError,
    FormatUnsupportedError,
    QueueNotEmptyError,
    QueueNotFoundError,
    TaskNotFoundError,
    ValidationError,
)
from ...inspection.inspector_core import InspectorCore
from ...message import TaskInfo
from ...quoting import shown
from ...sans_io import Command
from ...transitions import Call
from ..keys import ALL_QUEUES, CANCEL_CHANNEL, AsynqQueueKeys
from ..scripts import call
from ..task_info import task_info
from ..wire import WireTask

#: asynq's archive limits (``maxArchiveSize``, ``archivedExpirationInDays`` of its rdb): every archive action trims
#: the archive to the newest entries below the size, and drops what was archived before the age.
ARCHIVE_MAX_SIZE = 10_000
ARCHIVE_MAX_AGE = 90 * 86_400

#: The states each action takes, as asynq's scripts take them. One task: any state its script moves (an
#: aggregating task from its group). A bulk action: the states asynq's Inspector has a "...All" method for;
#: "aggregating" takes a group (every group of the queue when none is named).
RUNNABLE = frozenset({"scheduled", "retry", "archived", "completed", "aggregating"})
ARCHIVABLE = frozenset({"pending", "scheduled", "retry", "completed", "aggregating"})
DELETABLE = frozenset({"pending", "scheduled", "retry", "archived", "completed", "aggregating"})
CANCELLABLE = frozenset({"active"})
BULK_STATES = {
    "run_all": frozenset({"scheduled", "retry", "archived", "aggregating"}),
    "archive_all": frozenset({"pending", "scheduled", "retry", "aggregating"}),
    "delete_all": DELETABLE,
}
#: The sorted sets of a state whose bulk delete releases the unique locks their tasks hold, as asynq's does (its
#: delete of the pending list or of a group leaves the locks to expire).
_RELEASES_LOCKS = frozenset({"scheduled", "retry", "archived", "completed"})
#: What ``edit_task`` cannot change in asynq's format: asynq edits a payload, nothing else.
_NOT_EDITABLE = ("to_queue", "max_retry", "timeout", "task_type")


class TaskGetter(Protocol):
    """The one read an edit needs: the task as it is after the edit."""

    def get_task(self, queue: str, task_id: str) -> TaskInfo: ...


class AsynqTaskActions:
    """``TaskActions`` over asynq's keys: the same methods, arguments and results, with asynq's rules.

    ``tasks`` reads the task an edit returns (by default a read of its hash here); ``queue_reads`` is taken for a
    facade that builds every part alike, and not used: asynq's actions depend on no queue setting.

    Every action raises, besides what it lists:
        ValidationError: the queue name or task id is malformed, or a bulk action is given a state it does not
            take (see ``BULK_STATES``).
        QueueNotFoundError: asynq:queues has no queue of that name.
        RedisUnavailableError: Redis cannot be reached.
    """

    #: Tasks a bulk script moves per call.
    chunk = 1000

    def __init__(self, core: InspectorCore, tasks: TaskGetter | None = None, queue_reads: object = None) -> None:
        self.core = core
        self.broker = core.broker
        self.tasks = tasks
        self.queue_reads = queue_reads

    def pause_queue(self, actor: str, queue: str) -> None:
        """Stop Go and taskq servers taking the queue's tasks (tasks already running finish).

        Raises:
            FailedPreconditionError: the queue is paused already.
        """
        keys = self._acting_on(queue, "pause_queue")
        now = int(self.broker.clock.now())
        if not self._run("pause_queue", "inspect_pause", [keys.paused], [now]):
            raise FailedPreconditionError(f"queue {shown(queue)} is already paused", op="inspector.pause_queue")

    def unpause_queue(self, actor: str, queue: str) -> None:
        """Let servers take the queue's tasks again.

        Raises:
            FailedPreconditionError: the queue is not paused.
        """
        keys = self._acting_on(queue, "unpause_queue")
        if not self._run("unpause_queue", "inspect_unpause", [keys.paused], []):
            raise FailedPreconditionError(f"queue {shown(queue)} is not paused", op="inspector.unpause_queue")

    def delete_queue(self, actor: str, queue: str, force: bool = False) -> None:
        """Delete the queue's pending, active, scheduled, retry and archived tasks and their lists, then the queue.
        As asynq does, completed tasks, groups, the paused mark and the daily counters are left.

        Raises:
            QueueNotEmptyError: tasks are active (asynq's FailedPrecondition, named as ``TaskActions`` names it),
                or (without ``force``) a pending, scheduled, retry or archived task is left.
        """
        op = "inspector.delete_queue"
        keys = self._acting_on(queue, "delete_queue")
        lists = [keys.pending, keys.active, keys.scheduled, keys.retry, keys.archived, keys.lease]
        outcome = self._run("delete_queue", "inspect_remove_queue", lists, [keys.task_prefix, int(bool(force))])
        if outcome == -1:
            raise QueueNotEmptyError(f"queue {shown(queue)} still has tasks", op=op)
        if outcome == -2:
            raise QueueNotEmptyError(f"queue {shown(queue)} has active tasks: cancel them first", op=op)
        self.core.send("delete_queue", "srem", ALL_QUEUES, queue)

    def run_task(self, actor: str, queue: str, task_id: str) -> None:
        """Make a scheduled, retry, archived, completed or aggregating task pending now.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is active, or pending already.
        """
        keys = self._acting_on(queue, "run_task", task_id)
        self._task_script(
            "run_task",
            task_id,
            [keys.task(task_id), keys.pending, keys.groups],
            [task_id, keys.base, keys.group_prefix],
            {-1: "task is already running", -2: "task is already in pending state"},
        )

    def archive_task(self, actor: str, queue: str, task_id: str) -> None:
        """Archive a pending, scheduled, retry, completed or aggregating task now.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is active, or archived already.
        """
        keys = self._acting_on(queue, "archive_task", task_id)
        now, cutoff = self._archive_times()
        refusals = {-1: "task is already archived", -2: "cannot archive an active task: cancel it first"}
        args = [task_id, now, cutoff, ARCHIVE_MAX_SIZE, keys.base, keys.group_prefix]
        self._task_script("archive_task", task_id, [keys.task(task_id), keys.archived, keys.groups], args, refusals)

    def delete_task(self, actor: str, queue: str, task_id: str) -> None:
        """Delete a task that is not running; the unique lock it holds is released.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is active: cancel it first.
        """
        keys = self._acting_on(queue, "delete_task", task_id)
        refusals = {-1: "cannot delete an active task: cancel it first"}
        args = [task_id, keys.base, keys.group_prefix]
        self._task_script("delete_task", task_id, [keys.task(task_id), keys.groups], args, refusals)

    def edit_task(
        self,
        actor: str,
        queue: str,
        task_id: str,
        payload: bytes,
        *,
        to_queue: str | None = None,
        max_retry: int | None = None,
        timeout: float | None = None,
        task_type: str | None = None,
    ) -> TaskInfo:
        """Give a scheduled task a new ``payload`` (asynq's ``UpdateTaskPayload``): it stays scheduled, with every
        other field as it was. Returns the task as it is now.

        Raises:
            FormatUnsupportedError: another queue, ``max_retry``, ``timeout`` or ``task_type`` was given: asynq
                edits a payload only.
            ValidationError: the payload is over the size limit or too deeply nested.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not scheduled, or it changed while being edited.
        """
        op = "inspector.edit_task"
        asked = (to_queue not in (None, queue), max_retry is not None, timeout is not None, task_type is not None)
        refused = [name for name, given in zip(_NOT_EDITABLE, asked, strict=True) if given]
        if refused:
            raise FormatUnsupportedError(
                f"asynq's format edits a scheduled task's payload only, not its {', '.join(refused)}", op=op
            )
        keys = self._acting_on(queue, "edit_task", task_id)
        data = check.payload(payload, op, self.core.payload_limits)
        stored = self.core.send("edit_task", "hget", keys.task(task_id), "msg")
        if stored is None:
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(queue)}", op=op)
        edited = replace(WireTask.decode(stored), payload=data).encode()
        refusals = {-1: "only a scheduled task can be edited", -2: "the task changed while being edited: try again"}
        self._task_script("edit_task", task_id, [keys.task(task_id)], [edited, stored], refusals, "update_payload")
        if self.tasks is not None:
            return self.tasks.get_task(queue, task_id)
        return self._read_task(keys, task_id)

    def cancel_task(self, queue: str, task_id: str) -> int:
        """Ask the server running the task to cancel it (asynq's ``CancelProcessing``); returns how many
        subscribers heard the request.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not active.
        """
        op = "inspector.cancel_task"
        keys = self._acting_on(queue, "cancel_task", task_id)
        state = self.core.send("cancel_task", "hget", keys.task(task_id), "state")
        if state is None:
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(queue)}", op=op)
        if state != b"active":
            raise FailedPreconditionError(f"task {task_id} is {state.decode()}, not active", op=op)
        return int(self.core.send("cancel_task", "publish", CANCEL_CHANNEL, task_id))

    def cancel_all(self, queue: str) -> int:
        """Ask for every active task of the queue to be cancelled; returns how many were asked.

        Raises:
            only what every action raises (see the class).
        """
        keys = self._acting_on(queue, "cancel_all")
        ids = self.core.send("cancel_all", "lrange", keys.active, 0, -1)
        if self.broker.cluster:  # a cluster pipeline refuses PUBLISH: one command each
            for task_id in ids:
                self.core.send("cancel_all", "publish", CANCEL_CHANNEL, task_id)
        else:
            self.core.batch("cancel_all", [Command("publish", (CANCEL_CHANNEL, task_id)) for task_id in ids])
        return len(ids)

    def run_all(self, actor: str, queue: str, state: str, *, group: str | None = None) -> int:
        """Make every scheduled, retry or archived task, or every task of an aggregating ``group`` (of every group
        when none is named), pending now; returns how many.

        Raises:
            only what every action raises (see the class).
        """
        keys = self._acting_on(queue, "run_all")

        def one(source: str, kind: str, group_name: str) -> Call:
            del kind  # every state run_all takes is a sorted set
            return self._bulk_call("run_all", [source, keys.pending, keys.groups], [keys.task_prefix], group_name)

        return self._bulk("run_all", keys, state, group, one)

    def archive_all(self, actor: str, queue: str, state: str, *, group: str | None = None) -> int:
        """Archive every pending, scheduled or retry task, or every task of an aggregating ``group`` (of every group
        when none is named); returns how many.

        Raises:
            only what every action raises (see the class).
        """
        keys = self._acting_on(queue, "archive_all")
        now, cutoff = self._archive_times()  # one time for every chunk, as asynq's one call has

        def one(source: str, kind: str, group_name: str) -> Call:
            args = [keys.task_prefix, kind, now, cutoff, ARCHIVE_MAX_SIZE]
            return self._bulk_call("archive_all", [source, keys.archived, keys.groups], args, group_name)

        return self._bulk("archive_all", keys, state, group, one)

    def delete_all(self, actor: str, queue: str, state: str, *, group: str | None = None) -> int:
        """Delete every task of ``state`` (any but active), or every task of an aggregating ``group`` (of every
        group when none is named); returns how many. Deleting a scheduled, retry, archived or completed task
        releases the unique lock it holds, as asynq does.

        Raises:
            only what every action raises (see the class).
        """
        keys = self._acting_on(queue, "delete_all")
        release = int(state in _RELEASES_LOCKS)

        def one(source: str, kind: str, group_name: str) -> Call:
            args = [keys.task_prefix, kind, release]
            return self._bulk_call("delete_all", [source, keys.groups], args, group_name)

        return self._bulk("delete_all", keys, state, group, one)

    def _bulk(
        self,
        name: str,
        keys: AsynqQueueKeys,
        state: str,
        group: str | None,
        one: Callable[[str, str, str], Call],
    ) -> int:
        """Run ``one(source key, "list" or "zset", group name)``'s call until it moves nothing, for the state's
        list or set, or for each group named (``group``, or every group of the queue)."""
        allowed = BULK_STATES[name]
        if state not in allowed:
            raise ValidationError(
                f"{name} takes a state among {', '.join(sorted(allowed))}, not {shown(state)}", op=f"inspector.{name}"
            )
        if state != "aggregating":
            sources = [(keys.state(state), "list" if state == "pending" else "zset", "")]
        elif group is not None:
            sources = [
                (
                    keys.group(check.name(group, "group", check.MAX_QUEUE_NAME, f"inspector.{name}", visible=False)),
                    "zset",
                    group,
                )
            ]
        else:
            names = sorted(g.decode() for g in self.core.send(name, "smembers", keys.groups))
            sources = [(keys.group(g), "zset", g) for g in names]
        total = 0
        for source, kind, group_name in sources:
            while moved := int(self.broker.run(one(source, kind, group_name))):
                total += moved
        return total

    def _bulk_call(self, name: str, keys: list[str], args: list[Any], group: str) -> Call:
        """One chunk of ``lua/inspect_<name>.lua``: ``args`` with the chunk size second and the group name last."""
        return call(f"inspector.{name}", f"inspect_{name}", keys, [args[0], self.chunk, *args[1:], group], int)

    def _acting_on(self, queue: str, op: str, task_id: str | None = None) -> AsynqQueueKeys:
        """The keys of an action's queue, which must be in asynq:queues; with ``task_id``, the id is checked too."""
        check.queue_name(queue, f"inspector.{op}")
        if task_id is not None:
            check.task_id(task_id, f"inspector.{op}")
        if not self.core.send(op, "sismember", ALL_QUEUES, queue):
            raise QueueNotFoundError(f"no queue named {shown(queue)}", op=f"inspector.{op}")
        return AsynqQueueKeys(queue)

    def _task_script(
        self, op: str, task_id: str, keys: list[str], args: list[Any], refusals: dict[int, str], script: str = ""
    ) -> None:
        """Run ``lua/inspect_<script or op>.lua`` on one task: its reply 0 raises TaskNotFoundError, a code of
        ``refusals`` FailedPreconditionError with that message."""
        parse = _outcome(op, task_id, refusals)
        self.broker.run(call(f"inspector.{op}", f"inspect_{script or op}", keys, args, parse))

    def _run(self, op: str, script: str, keys: list[str], args: list[Any]) -> int:
        return int(self.broker.run(call(f"inspector.{op}", script, keys, args)))

    def _archive_times(self) -> tuple[int, int]:
        """Now, and the cutoff before which archived tasks are dropped (Unix seconds)."""
        now = int(self.broker.clock.now())
        return now, now - ARCHIVE_MAX_AGE

    def _read_task(self, keys: AsynqQueueKeys, task_id: str) -> TaskInfo:
        """The task as its hash and its state's score give it (the read an edit returns without ``tasks``)."""
        fields = self.core.send("get_task", "hgetall", keys.task(task_id))
        if not fields:
            raise TaskNotFoundError(f"no task {shown(task_id)} in queue {shown(keys.queue)}", op="inspector.get_task")
        state = fields.get(b"state", b"").decode()
        scored = keys.lease if state == "active" else keys.state(state)
        score = None if state in ("pending", "aggregating") else self.core.send("get_task", "zscore", scored, task_id)
        return task_info(keys.queue, task_id, fields, score)


def _outcome(op: str, task_id: str, refusals: dict[int, str]) -> Callable[[Any], int]:
    """The parser of a one-task script's reply: 1 is done, 0 is no such task, a code of ``refusals`` is refused."""

    def parse(reply: Any) -> int:
        code = int(reply)
        if code == 0:
            raise TaskNotFoundError(f"no task {shown(task_id)}", op=f"inspector.{op}")
        if code in refusals:
            raise FailedPreconditionError(refusals[code], op=f"inspector.{op}")
        return code

    return parse
