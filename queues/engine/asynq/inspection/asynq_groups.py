"""asynq's groups of aggregating tasks (``GroupInfo``), as asynq's ``Groups`` reads them, and the workflows asynq
does not have: none are listed, and reading or acting on one is refused.
"""

from __future__ import annotations

from datetime import datetime

from ...inspection.groups_workflows import Groups, Workflows
from ...workflows import WorkflowInfo
from ..keys import AsynqQueueKeys
from ..task_info import from_unix
from .reads_core import refusing


class AsynqGroups(Groups):
    """An asynq queue's groups of aggregating tasks: ``Groups`` over asynq's keys, where a task's score in its
    group is when it joined, in Unix seconds."""

    def names_key(self, queue: str) -> str:
        names: str = AsynqQueueKeys(queue).groups
        return names

    def group_key(self, queue: str, name: str) -> str:
        return AsynqQueueKeys(queue).group(name)

    @staticmethod
    def joined(score: float) -> datetime | None:
        return from_unix(score)


class AsynqWorkflows(Workflows):
    """asynq has no workflows: a queue lists none, and reading or acting on one is refused."""

    def workflows(self, queue: str, page: int = 1, size: int = 20) -> list[tuple[str, datetime | None]]:
        """None: asynq's format holds no workflows (the queue must exist).

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "workflows")
        return []

    def workflow_summaries(self, queue: str, workflow_ids: list[str]) -> dict[str, WorkflowInfo]:
        """None: asynq's format holds no workflows.

        Raises:
            nothing: nothing is read.
        """
        return {}


refusing(AsynqWorkflows, ["workflow", "retry_workflow", "cancel_workflow", "archive_workflow"], "workflows")
