"""The read and operator API over Redis: queues, tasks, servers, and every operator action.

``Inspector`` is the one entry point: a thin facade over one part per concern, each a small class of
``inspection/`` that takes the shared ``InspectorCore`` (and, where it reads through another part, that part). No
part inherits from another. Every name below stays importable from here:

- ``core``: what the parts share: the broker, the policy cache, the checks an operation starts with (the queue
  exists, the key layout is ours), every command sent as ``inspector.<op>``.
- ``queue_stats``: ``QueueReads``: the queue set, each queue's sizes, latency, memory and counters
  (``QueueInfo``), per-type counts, outstanding work, a queue's definition and archive limits.
- ``queue_history``: ``QueueHistory``: time series, daily counts (``DailyStats``), the event exporter's status.
- ``groups_workflows``: ``Groups`` of aggregating tasks (``GroupInfo``); ``Workflows`` and the actions on one.
- ``task_reads``: ``TaskReads``: lists of a state, one task, which tasks exist, a task's events (``TaskEvent``),
  error groups. It reads the groups to list aggregating tasks.
- ``task_search``: ``TaskSearch``: bounded searches (``SearchResult``, ``SearchPage``), through the task and queue
  reads.
- ``task_actions``: ``TaskActions``: pause, unpause and delete a queue; single and bulk task actions;
  cancellations.
- ``server_ops``: ``ServerOps``: live and ended worker servers, quiet/stop and its acknowledgement, the HTTP API's
  served queues, Redis's INFO (``ServerInfo`` and ``ServerRecord`` are in ``server_records``).
- ``forwarding``: how each method of the facade is its part's method, typed as the part's (one line a method).

``Inspector(..., key_format="asynq")`` builds the parts of ``asynq/inspection`` instead: the same methods over Go
asynq's keys (``TASKS_KEY_FORMAT``).

One inspector serves a whole process (the console keeps one per configuration): ``acting_as(actor)`` gives a
request a view of it whose actions record that actor, sharing the broker, its connection pool and the parts. The
parts keep nothing per request; the facade's only state of its own is ``actor``.

Reads use O(1) commands or ranges (LRANGE/ZRANGE pages, counts, a sample for memory), never full scans, so
they stay fast on queues of millions. Every action is one transition script, or a loop of chunked ones, and is
refused with LayoutVersionError, changing nothing, on a keyspace at another key layout (see ``layout``).
"""

from __future__ import annotations

import copy
from typing import NamedTuple, Unpack

from . import process_defaults
from . import validation as check
from .actions import ARCHIVABLE, DELETABLE, RUNNABLE
from .asynq.inspection.asynq_groups import AsynqGroups, AsynqWorkflows
from .asynq.inspection.asynq_history import AsynqQueueHistory
from .asynq.inspection.asynq_queues import AsynqQueueReads
from .asynq.inspection.asynq_servers import AsynqServerOps
from .asynq.inspection.asynq_tasks import AsynqTaskReads
from .asynq.inspection.reads_core import AsynqInspectorCore
from .asynq.inspection.task_actions import AsynqTaskActions
from .broker import Broker, BrokerOptions, BrokerOwner
from .errors import ValidationError
from .inspection.forwarding import acting, forward
from .inspection.groups_workflows import GroupInfo, Groups, Workflows
from .inspection.inspector_core import LAYOUT_RECHECK, MAX_PAGE_SIZE, InspectorCore
from .inspection.queue_history import DailyStats, QueueHistory
from .inspection.queue_stats import MEMORY_GROUPS, MEMORY_SAMPLE, QueueInfo, QueueReads, count_unlisted
from .inspection.server_ops import ACK_POLL, API_SERVED_WINDOW, INFO_REFUSED, ServerOps
from .inspection.task_actions import TaskActions
from .inspection.task_reads import EVENT_SCAN_LIMIT, WAITING_ON_LISTED, TaskEvent, TaskReads
from .inspection.task_search import SCAN_LIMIT, SearchPage, SearchResult, TaskSearch, page_count
from .quoting import shown
from .server_records import ServerInfo, server_info, server_record
from .settings import KEY_FORMATS

__all__ = [
    "ACK_POLL",
    "API_SERVED_WINDOW",
    "ARCHIVABLE",
    "count_unlisted",
    "DailyStats",
    "DELETABLE",
    "EVENT_SCAN_LIMIT",
    "GroupInfo",
    "INFO_REFUSED",
    "Inspector",
    "InspectorCore",
    "KEY_FORMATS",
    "LAYOUT_RECHECK",
    "MAX_PAGE_SIZE",
    "MEMORY_GROUPS",
    "MEMORY_SAMPLE",
    "page_count",
    "QueueInfo",
    "RUNNABLE",
    "SCAN_LIMIT",
    "SearchPage",
    "SearchResult",
    "server_info",
    "server_record",
    "ServerInfo",
    "TaskEvent",
    "WAITING_ON_LISTED",
]


class Parts(NamedTuple):
    """The classes of an inspector's core and parts for one key layout (the search reads through the others)."""

    core: type[InspectorCore]
    queue_reads: type[QueueReads]
    history: type[QueueHistory]
    groups: type[Groups]
    workflows: type[Workflows]
    tasks: type[TaskReads]
    actions: type[TaskActions] | type[AsynqTaskActions]
    servers: type[ServerOps]


TASKQ_PARTS = Parts(InspectorCore, QueueReads, QueueHistory, Groups, Workflows, TaskReads, TaskActions, ServerOps)
#: asynq's (``asynq/inspection``): the same methods over asynq's layout; no taskq script or layout check runs there.
ASYNQ_PARTS = Parts(
    AsynqInspectorCore,
    AsynqQueueReads,
    AsynqQueueHistory,
    AsynqGroups,
    AsynqWorkflows,
    AsynqTaskReads,
    AsynqTaskActions,
    AsynqServerOps,
)


class Inspector(BrokerOwner):
    """``Inspector(redis_url)``, or ``Inspector(broker=broker)`` over a broker the caller has; ``actor`` is recorded
    in the event of every action it takes. Before an action it checks the keyspace's key layout (again after
    ``layout_recheck`` seconds). ``key_format`` "asynq": the keyspace holds Go asynq's keys (``TASKS_KEY_FORMAT``),
    read by the parts of ``asynq/inspection``. Each method below is its part's (see ``inspection/forwarding.py``),
    documented there.

    Raises:
        ValidationError: (the constructor) a ``broker`` is given together with a URL or connection options, or
            ``key_format`` is not one of ``KEY_FORMATS``.
    """

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        actor: str = "operator",
        layout_recheck: float = LAYOUT_RECHECK,
        payload_limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
        broker: Broker | None = None,
        key_format: str = "taskq",
        **options: Unpack[BrokerOptions],
    ):
        if key_format not in KEY_FORMATS:
            raise ValidationError(
                f"key_format must be one of {', '.join(KEY_FORMATS)}, not {shown(key_format)}", op="inspector"
            )
        if broker is None:
            # Given no URL or prefix, where a bare Client() of this process would write (see process_defaults).
            if "prefix" not in options:  # asked only when not given: the default reads the environment
                options["prefix"] = process_defaults.key_prefix()
            broker = Broker(redis_url or process_defaults.redis_url(), **options)
        elif redis_url is not None or options:
            raise ValidationError("give an inspector a broker, or a URL and options, not both", op="inspector")
        self.broker = broker
        self.key_format = key_format
        self.payload_limits, self.layout_recheck = payload_limits, layout_recheck
        self.actor = actor
        parts = ASYNQ_PARTS if key_format == "asynq" else TASKQ_PARTS
        core = parts.core(broker, layout_recheck=layout_recheck, payload_limits=payload_limits)
        self.keys, self.ops, self.policies = core.keys, core.ops, core.policies
        self._queue_reads = parts.queue_reads(core)
        self._history = parts.history(core)
        self._groups = parts.groups(core)
        self._workflows = parts.workflows(core)
        self._tasks = parts.tasks(core, self._groups)
        self._search = TaskSearch(core, self._tasks, self._queue_reads)
        self._actions = parts.actions(core, self._tasks, self._queue_reads)
        self._servers = parts.servers(core)

    def acting_as(self, actor: str) -> Inspector:
        """This inspector acting for ``actor``: the same broker, connection pool, parts and layout check, with
        ``actor`` recorded by its actions. Cheap (no connection, no part is built), so each request of a process
        gets its own; closing one closes the broker they share.

        Raises:
            nothing: a view sends no command.
        """
        view = copy.copy(self)
        view.actor = actor
        return view

    # The parts' methods, part by part; ``acting``: an action, handed this inspector's actor to record.

    queues = forward(QueueReads.queues, "_queue_reads")
    queue_info = forward(QueueReads.queue_info, "_queue_reads")
    queue_infos = forward(QueueReads.queue_infos, "_queue_reads")
    fleet_summary = forward(QueueReads.fleet_summary, "_queue_reads")
    outstanding = forward(QueueReads.outstanding, "_queue_reads")
    type_counts = forward(QueueReads.type_counts, "_queue_reads")
    type_counts_of = forward(QueueReads.type_counts_of, "_queue_reads")
    queue_definition = forward(QueueReads.queue_definition, "_queue_reads")
    archive_limits = forward(QueueReads.archive_limits, "_queue_reads")

    series = forward(QueueHistory.series, "_history")
    history = forward(QueueHistory.history, "_history")
    histories = forward(QueueHistory.histories, "_history")
    export_status = forward(QueueHistory.export_status, "_history")

    list_tasks = forward(TaskReads.list_tasks, "_tasks")
    list_tasks_after = forward(TaskReads.list_tasks_after, "_tasks")
    get_task = forward(TaskReads.get_task, "_tasks")
    existing_tasks = forward(TaskReads.existing_tasks, "_tasks")
    error_groups = forward(TaskReads.error_groups, "_tasks")
    task_record = forward(TaskReads.task_record, "_tasks")
    task_events = forward(TaskReads.task_events, "_tasks")

    search_tasks = forward(TaskSearch.search_tasks, "_search")
    search = forward(TaskSearch.search, "_search")
    payload_sample = forward(TaskSearch.payload_sample, "_search")

    pause_queue = acting(TaskActions.pause_queue, "_actions")
    unpause_queue = acting(TaskActions.unpause_queue, "_actions")
    delete_queue = acting(TaskActions.delete_queue, "_actions")
    delete_task = acting(TaskActions.delete_task, "_actions")
    run_task = acting(TaskActions.run_task, "_actions")
    archive_task = acting(TaskActions.archive_task, "_actions")
    edit_task = acting(TaskActions.edit_task, "_actions")
    cancel_task = forward(TaskActions.cancel_task, "_actions")
    delete_all = acting(TaskActions.delete_all, "_actions")
    run_all = acting(TaskActions.run_all, "_actions")
    archive_all = acting(TaskActions.archive_all, "_actions")
    cancel_all = forward(TaskActions.cancel_all, "_actions")

    groups = forward(Groups.groups, "_groups")

    workflow = forward(Workflows.workflow, "_workflows")
    workflows = forward(Workflows.workflows, "_workflows")
    workflow_summaries = forward(Workflows.workflow_summaries, "_workflows")
    retry_workflow = acting(Workflows.retry_workflow, "_workflows")
    cancel_workflow = acting(Workflows.cancel_workflow, "_workflows")
    archive_workflow = acting(Workflows.archive_workflow, "_workflows")

    servers = forward(ServerOps.servers, "_servers")
    server = forward(ServerOps.server, "_servers")
    ended_servers = forward(ServerOps.ended_servers, "_servers")
    ended_server = forward(ServerOps.ended_server, "_servers")
    control_server = forward(ServerOps.control_server, "_servers")
    control_servers = forward(ServerOps.control_servers, "_servers")
    acknowledgement = forward(ServerOps.acknowledgement, "_servers")
    wait_for_acknowledgement = forward(ServerOps.wait_for_acknowledgement, "_servers")
    api_served_queues = forward(ServerOps.api_served_queues, "_servers")
    redis_info = forward(ServerOps.redis_info, "_servers")
