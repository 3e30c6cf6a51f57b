"""An operator's actions on queues and tasks: pause, unpause and delete a queue; delete, run, edit, archive or
cancel one task; delete, run, archive or cancel every task of a state.

Every action is one transition script, or a loop of chunked ones (a bulk action moves a chunk a call until a
call moves nothing), recorded with the ``actor`` it is given (the facade's), and refused with LayoutVersionError,
changing nothing, on a keyspace at another key layout (see ``layout``). A cancellation is a request published to the
workers, not a transition: the worker running the task stops it.

It deliberately shares its name with ``queues/engine/asynq/inspection/task_actions.py``, which does the same over Go
asynq's keys.
"""

from __future__ import annotations

from dataclasses import replace

from .. import operator_trace
from .. import validation as check
from ..actions import ARCHIVABLE, DELETABLE, RUNNABLE  # the states each bulk action takes: the one action table
from ..errors import (
    FailedPreconditionError,
    QueueNotEmptyError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from ..keys import cancel_message
from ..message import TaskInfo, TaskMessage
from ..operator_trace import OperatorMark
from ..quoting import shown
from ..sans_io import Command
from ..transitions import Placement
from .inspector_core import InspectorCore
from .queue_stats import QueueReads
from .task_reads import TaskReads

_BULK_STATES = {"delete_all": DELETABLE, "run_all": RUNNABLE, "archive_all": ARCHIVABLE}


class TaskActions:
    """Actions on a queue and its tasks, each recording the ``actor`` it is given. A cancellation reads the task
    first (``TaskReads.get_task``); deleting a queue reads its sizes, an archive its limits (``QueueReads``).

    Every action raises, besides what it lists:
        ValidationError: the queue name or task id is malformed, or a bulk action is given a state it does not
            take (see ``DELETABLE``, ``RUNNABLE``, ``ARCHIVABLE``).
        LayoutVersionError: the keyspace is at another key layout (see ``layout``).
        QueueNotFoundError: there is no queue of that name.
        RedisUnavailableError: Redis cannot be reached.
    """

    def __init__(self, core: InspectorCore, tasks: TaskReads, queues: QueueReads) -> None:
        self.core = core
        self.keys = core.keys
        self.ops = core.ops
        self.broker = core.broker
        self.tasks = tasks
        self.queue_reads = queues

    def pause_queue(self, actor: str, queue: str) -> None:
        """Stop workers taking the queue's tasks (tasks already running finish).

        Raises:
            only what every action raises (see the class).
        """
        self.broker.run(self.ops.pause(self.core.acting_on(queue, "pause"), actor, paused=True))

    def unpause_queue(self, actor: str, queue: str) -> None:
        """Let workers take the queue's tasks again.

        Raises:
            only what every action raises (see the class).
        """
        self.broker.run(self.ops.pause(self.core.acting_on(queue, "unpause"), actor, paused=False))

    def delete_queue(self, actor: str, queue: str, force: bool = False) -> None:
        """Refused while tasks are active, or while any task is left unless ``force``.

        Raises:
            QueueNotEmptyError: tasks are active, or (without ``force``) any task is left.
        """
        self.core.acting_on(queue, "delete_queue")
        if force:
            info = self.queue_reads.queue_info(queue)
            if info.active:
                raise QueueNotEmptyError(f"{info.active} tasks are active", op="inspector.delete_queue")
            for state in DELETABLE:
                self._bulk("delete_all", queue, state, actor)
        self.broker.run(self.ops.delete_queue(queue, force))
        self.core.send("delete_queue", "srem", self.keys.queues, queue)

    def delete_task(self, actor: str, queue: str, task_id: str) -> None:
        """Delete a task that is not running. Tasks waiting for it (unless it had completed) are archived, as when
        it fails, and a workflow it belongs to fails (see ``workflows``).

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is active (a worker runs it): cancel it first.
        """
        self._task_action("delete_task", queue, task_id, actor)

    def run_task(self, actor: str, queue: str, task_id: str) -> None:
        """Make a scheduled, retry, archived or waiting task pending now. A waiting task runs without waiting for
        its dependencies any longer (with the results of those that succeeded already, when it asked for them);
        the tasks waiting for it still wait for it to succeed.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not scheduled, retry, archived or waiting, or it is the on_error
                callback of a workflow (it runs when the workflow fails).
        """
        self._task_action("run_task", queue, task_id, actor)

    def archive_task(self, actor: str, queue: str, task_id: str) -> None:
        """Archive a pending, scheduled or retry task now.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not pending, scheduled or retry.
        """
        self._task_action("archive_task", queue, task_id, actor)

    def _task_action(self, name: str, queue: str, task_id: str, actor: str) -> None:
        self.core.acting_on(queue, name, task_id)
        if name == "archive_task":
            call = self.ops.archive_task(queue, task_id, actor, self.queue_reads.archive_limits(queue))
        elif name == "run_task":
            call = self.ops.run_task(queue, task_id, actor, self._operator_mark(name, queue, task_id))
        else:
            call = getattr(self.ops, name)(queue, task_id, actor)
        self.broker.run(call)

    def _operator_mark(self, name: str, queue: str, task_id: str) -> OperatorMark | None:
        """The current trace context to record on the task (``operator_trace``), or None: no span is current (one
        read of the task's options when there is one)."""
        operator = operator_trace.current_headers()
        if not operator:
            return None
        return operator_trace.mark(self.core.send(name, "hget", self.keys.queue(queue).task(task_id), "msg"), operator)

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
        """Edit a retry or archived task and run it: new ``payload`` (bytes, as stored), and where given a new
        ``max_retry``, ``timeout`` (seconds), queue or ``task_type`` (for a type no worker handles, e.g. misspelt).
        It becomes pending with its retry count at 0; its id and history stay, and its type unless given. In its
        own queue this is one transition (``lua/edit_task.lua``). Into another queue it is enqueued there under
        the same id, then deleted here (two steps: the queues live in different Cluster slots). Returns the task
        as it is now.

        Raises:
            ValidationError: an option is malformed, or the payload is over the size limit.
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not retry or archived.
            TaskIdConflictError: the other queue already holds a task with that id (nothing changed).
        """
        op = "inspector.edit_task"
        self.core.acting_on(queue, "edit_task", task_id)
        data = check.payload(payload, op, self.core.payload_limits)
        # A move to another queue gives it a new task: the rules of enqueue. Staying put is no new queue.
        target = check.new_queue_name(to_queue, op) if to_queue and to_queue != queue else queue
        q = self.keys.queue(queue)
        fields = self.core.send("edit_task", "hmget", q.task(task_id), "type", "msg", "state")
        if fields[0] is None:
            raise TaskNotFoundError(task_id, op=op)
        if fields[2] not in (b"retry", b"archived"):
            raise FailedPreconditionError(
                f"task is {(fields[2] or b'?').decode()}, only a retry or archived task can be edited", op=op
            )
        new_type = check.task_type(task_type, op) if task_type else ""
        message = replace(TaskMessage.decode(task_id, target, fields[0], data, fields[1] or b""), payload=data)
        if new_type:
            message = replace(message, type=new_type)
        if max_retry is not None:
            message.max_retry = check.count(max_retry, "max_retry", 0, check.MAX_RETRY_LIMIT, op)
        if timeout is not None:
            message.timeout = check.seconds(timeout, "timeout", op)
        operator = operator_trace.current_headers()
        if operator:
            message.headers = operator_trace.with_operator_headers(message.headers, operator)
        if target == queue:
            trace = operator_trace.trace_id(operator.get(operator_trace.OPERATOR_TRACEPARENT))
            call = self.ops.edit_task(queue, task_id, data, message.encode_options(), actor, new_type, trace)
            self.broker.run(call)
        else:
            self._move_edited(message, queue, actor)
        try:
            return self.tasks.get_task(target, task_id)
        except TaskNotFoundError:
            # The edit held, and a worker already ran the task and deleted it on success (no retention): report the
            # task as the edit left it, not a "not found" for an edit that worked.
            return TaskInfo(
                id=task_id, type=message.type, queue=target, state="pending", payload=data,
                max_retry=message.max_retry, timeout=message.effective_timeout(), retention=message.retention,
            )  # fmt: skip

    def _move_edited(self, message: TaskMessage, queue: str, actor: str) -> None:
        """An edited task into its new queue (``message.queue``): enqueued there under its id, then deleted here."""
        try:
            new_queue = self.broker.run(self.ops.enqueue(message.queue, [Placement(message)], actor))
        except TaskIdConflictError:
            raise TaskIdConflictError(
                f"queue {shown(message.queue)} already holds a task {shown(message.id)}; nothing was changed",
                op="inspector.edit_task",
            ) from None
        if new_queue:
            self.core.send("edit_task", "sadd", self.keys.queues, message.queue)
        self.broker.run(self.ops.delete_task(queue, message.id, actor))

    def cancel_task(self, queue: str, task_id: str) -> int:
        """Ask the worker running the task to cancel it; returns how many workers heard the request.

        Raises:
            TaskNotFoundError: the queue holds no task with that id.
            FailedPreconditionError: the task is not active.
        """
        self.core.check_layout("cancel_task")
        task = self.tasks.get_task(queue, task_id)
        if task.state != "active":
            raise FailedPreconditionError(f"task {task_id} is {task.state}, not active", op="inspector.cancel_task")
        channel = self.keys.cancel_channel(self.core.database)
        mark = self._operator_mark("cancel_task", queue, task_id)
        if mark is not None:  # the context goes onto the task in the call that sends the request
            return int(
                self.broker.run(self.ops.cancel_task(queue, task_id, channel, cancel_message(queue, task_id), mark))
            )
        return int(self.core.send("cancel_task", "publish", channel, cancel_message(queue, task_id)))

    def delete_all(self, actor: str, queue: str, state: str) -> int:
        """Delete every task of ``state`` (one of ``DELETABLE``); returns how many.

        Raises:
            only what every action raises (see the class).
        """
        return self._bulk("delete_all", self.core.acting_on(queue, "delete_all"), state, actor)

    def run_all(self, actor: str, queue: str, state: str) -> int:
        """Make every task of ``state`` (one of ``RUNNABLE``) pending now; returns how many.

        Raises:
            only what every action raises (see the class).
        """
        return self._bulk("run_all", self.core.acting_on(queue, "run_all"), state, actor)

    def archive_all(self, actor: str, queue: str, state: str) -> int:
        """Archive every task of ``state`` (one of ``ARCHIVABLE``); returns how many.

        Raises:
            only what every action raises (see the class).
        """
        return self._bulk("archive_all", self.core.acting_on(queue, "archive_all"), state, actor)

    def _bulk(self, name: str, queue: str, state: str, actor: str) -> int:
        allowed = _BULK_STATES[name]
        if state not in allowed:
            raise ValidationError(
                f"{name} takes a state among {', '.join(sorted(allowed))}, not {shown(state)}",
                op=f"inspector.{name}",
            )
        total = 0
        extra = {"archive_limits": self.queue_reads.archive_limits(queue)} if name == "archive_all" else {}
        while True:
            moved = int(self.broker.run(getattr(self.ops, name)(queue, state, actor, **extra)))
            total += moved
            if moved == 0:
                return total

    def cancel_all(self, queue: str) -> int:
        """Ask for every active task of the queue to be cancelled; returns how many were asked.

        Raises:
            only what every action raises (see the class).
        """
        self.core.acting_on(queue, "cancel_all")
        ids = self.core.send("cancel_all", "zrange", self.keys.queue(queue).lease, 0, -1)
        channel = self.keys.cancel_channel(self.core.database)
        requests = [Command("publish", (channel, cancel_message(queue, task_id.decode()))) for task_id in ids]
        if self.broker.cluster:  # a cluster pipeline refuses PUBLISH
            for request in requests:
                self.core.send("cancel_all", "publish", *request.args)
        else:
            self.core.batch("cancel_all", requests)
        return len(ids)
