"""The read and operator API over Redis: queues, tasks, servers, and every operator action.

``Inspector`` is the one entry point; it is put together from one class per concern, each in its own module of
``inspection/``, and every name below stays importable from here:

- ``inspector_base``: what they share: the broker and its connection, key builders, error translation
  (``inspector.<op>``), the queue and key layout checks an action starts with.
- ``queue_stats``: the queue set, each queue's sizes, latency, memory and counters (``QueueInfo``), per-type
  counts, outstanding work, a queue's definition and archive limits.
- ``queue_history``: time series, daily counts (``DailyStats``), the event exporter's status.
- ``task_reads``: lists of a state, one task, which tasks exist, a task's events (``TaskEvent``), error groups.
- ``task_search``: bounded searches (``SearchResult``, ``SearchPage``).
- ``task_actions``: pause, unpause and delete a queue; single and bulk task actions; cancellations.
- ``server_ops``: live and ended worker servers, quiet/stop and its acknowledgement, the HTTP API's served
  queues, Redis's INFO (``ServerInfo`` and ``ServerRecord`` are in ``server_records``).
- ``groups_workflows``: groups of aggregating tasks (``GroupInfo``), workflows and the actions on one.

Each class inherits exactly the parts it calls (``TaskActions`` reads tasks and queue sizes, so it is a
``TaskReads`` and a ``QueueStats``), so no part relies on a method only the whole provides.

Reads use O(1) commands or ranges (LRANGE/ZRANGE pages, counts, a sample for memory), never full scans, so
they stay fast on queues of millions. Every action is one transition script, or a loop of chunked ones, and is
refused with LayoutVersionError, changing nothing, on a keyspace at another key layout (see ``layout``).
"""

from __future__ import annotations

from .inspection.groups_workflows import GroupInfo
from .inspection.inspector_base import LAYOUT_RECHECK, MAX_PAGE_SIZE
from .inspection.queue_history import DailyStats, QueueHistory
from .inspection.queue_stats import MEMORY_GROUPS, MEMORY_SAMPLE, QueueInfo, count_unlisted
from .inspection.server_ops import ACK_POLL, API_SERVED_WINDOW, INFO_REFUSED, ServerOps
from .inspection.task_actions import ARCHIVABLE, DELETABLE, RUNNABLE, TaskActions
from .inspection.task_reads import EVENT_SCAN_LIMIT, WAITING_ON_LISTED, TaskEvent
from .inspection.task_search import SCAN_LIMIT, SearchPage, SearchResult, TaskSearch, page_count
from .server_records import ServerInfo, server_info, server_record

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


class Inspector(TaskSearch, TaskActions, QueueHistory, ServerOps):
    """``Inspector(redis_url)``; ``actor`` is recorded in the event of every action it takes. Before an action it
    checks the keyspace's key layout (again after ``layout_recheck`` seconds).

    Its methods come from the parts listed in this module's docstring; ``TaskSearch`` and ``TaskActions`` bring
    ``TaskReads``, ``QueueStats`` and ``GroupsAndWorkflows`` with them.
    """
