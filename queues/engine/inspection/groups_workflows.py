"""Groups and workflows: a queue's groups of aggregating tasks (``GroupInfo``), its workflows (``WorkflowInfo``,
from ``workflows``), and an operator's actions on a whole workflow (retry, cancel, archive), each one script.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..clock import from_ms
from ..errors import TaskNotFoundError
from ..quoting import shown
from ..sans_io import Command
from ..workflows import WorkflowInfo, action_call, read_flow, read_many_flow
from .inspector_core import InspectorCore


@dataclass
class GroupInfo:
    """A group of aggregating tasks: its name, how many tasks it holds, when the oldest joined."""

    name: str
    size: int
    oldest: datetime | None = None


class Groups:
    """A queue's groups of aggregating tasks."""

    def __init__(self, core: InspectorCore) -> None:
        self.core = core
        self.keys = core.keys

    def groups(self, queue: str) -> list[GroupInfo]:
        """The queue's groups of aggregating tasks with their sizes, by name (asynq's ``group ls``). Tasks an
        aggregator has cut from a group and not yet combined are counted in ``aggregating`` of the queue only.

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "groups")
        names = sorted(n.decode() for n in self.core.send("groups", "smembers", self.names_key(queue)))
        commands: list[Command] = []
        for name in names:
            commands.append(Command("zcard", (self.group_key(queue, name),)))
            commands.append(Command("zrange", (self.group_key(queue, name), 0, 0), {"withscores": True}))
        replies = self.core.batch("groups", commands)
        out = []
        for index, name in enumerate(names):
            size, oldest = replies[2 * index], replies[2 * index + 1]
            if size:
                out.append(GroupInfo(name, size, self.joined(oldest[0][1]) if oldest else None))
        return out

    # The layout's own parts of a group, which asynq's layout gives otherwise (``asynq/inspection``).

    def names_key(self, queue: str) -> str:
        """The set of the queue's group names."""
        return self.keys.queue(queue).groups

    def group_key(self, queue: str, name: str) -> str:
        """The sorted set of one group's tasks."""
        return self.keys.queue(queue).group(name)

    @staticmethod
    def joined(score: float) -> datetime | None:
        """When a task joined its group, from its score there (epoch ms)."""
        return from_ms(int(score))


class Workflows:
    """A queue's workflows, and the actions on a workflow (each recording the ``actor`` it is given).

    Every method given a workflow id (``workflow`` and the actions) raises, besides what it lists:
        ValidationError: the queue name or workflow id is malformed.
        QueueNotFoundError: there is no queue of that name.
        TaskNotFoundError: the queue holds no workflow with that id (or its record expired).
        RedisUnavailableError: Redis cannot be reached.
        LayoutVersionError: (an action) the keyspace is at another key layout (see ``layout``).
    """

    def __init__(self, core: InspectorCore) -> None:
        self.core = core
        self.keys = core.keys

    def workflow(self, queue: str, workflow_id: str) -> WorkflowInfo:
        """A workflow: its state, and each member's role, dependencies, state (or how it ended) and result.

        Raises:
            only what every method given a workflow id raises (see the class).
        """
        self.core.known(queue, "workflow", workflow_id)
        info = self.core.drive("workflow", read_flow(self.keys, queue, workflow_id))
        if not isinstance(info, WorkflowInfo):
            raise TaskNotFoundError(
                f"no workflow {shown(workflow_id)} in queue {shown(queue)} "
                "(a finished workflow is kept for its keep time)",
                op="inspector.workflow",
            )
        return info

    def workflows(self, queue: str, page: int = 1, size: int = 20) -> list[tuple[str, datetime | None]]:
        """Ids of the queue's workflows, newest first, with their creation time.

        Raises:
            ValidationError: the queue name is malformed, or ``page``/``size`` out of range.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "workflows")
        page, size = self.core.paged("inspector.workflows", page, size)
        rows = self.core.send(
            "workflows",
            "zrevrange",
            self.keys.queue(queue).workflows,
            (page - 1) * size,
            page * size - 1,
            withscores=True,
        )
        return [(wf.decode(), from_ms(int(score))) for wf, score in rows]

    def workflow_summaries(self, queue: str, workflow_ids: list[str]) -> dict[str, WorkflowInfo]:
        """The workflows of ``workflow_ids`` still kept (an expired one is left out), for a list: state, progress,
        where each failed or stalls, in two round trips for all of them. Members carry no results, and only
        those that have not ended are read (at most ``workflows.LISTED_MEMBERS`` per workflow).

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "workflow_summaries")
        return dict(self.core.drive("workflow_summaries", read_many_flow(self.keys, queue, list(workflow_ids))))

    def retry_workflow(self, actor: str, queue: str, workflow_id: str) -> int:
        """Run a failed workflow again from where it failed: its failed members become pending, the members its
        failure cancelled wait again (or run, when what they wait for has succeeded since), and it is running
        again (``lua/workflow_retry.lua``). Its on_error callback is not run again. Returns how many members
        moved.

        Raises:
            FailedPreconditionError: the workflow has not failed, or a failed or cancelled member is no longer
                archived (deleted, run on its own, or trimmed from the archive).
            and what every method given a workflow id raises (see the class).
        """
        return self._action("workflow_retry", queue, workflow_id, actor)

    def cancel_workflow(self, actor: str, queue: str, workflow_id: str) -> int:
        """Stop a workflow: every member that has not started is archived as "cancelled by <actor>"; running
        members finish on their own; a waiting on_error callback is dropped. A running workflow ends
        ``cancelled``; a failed one stays failed (``lua/workflow_cancel.lua``). Returns how many members it
        cancelled.

        Raises:
            FailedPreconditionError: it succeeded or was cancelled, or it failed with nothing left to run.
            and what every method given a workflow id raises (see the class).
        """
        return self._action("workflow_cancel", queue, workflow_id, actor)

    def archive_workflow(self, actor: str, queue: str, workflow_id: str) -> int:
        """Give up on a running workflow's steps that have not started (pending, scheduled, retry): each is
        archived as "archived by <actor>", so the workflow fails as on any failure (waiting members cancelled,
        on_error released) (``lua/workflow_archive.lua``). Returns how many members it archived.

        Raises:
            FailedPreconditionError: the workflow is not running, or none of its members is pending, scheduled
                or retry.
            and what every method given a workflow id raises (see the class).
        """
        return self._action("workflow_archive", queue, workflow_id, actor)

    def _action(self, name: str, queue: str, workflow_id: str, actor: str) -> int:
        self.core.acting_on(queue, name, workflow_id)
        return int(self.core.broker.run(action_call(self.core.ops, name, queue, workflow_id, actor)))
