"""The task engine: everything that talks to Redis. Imports no Django, so any Python program can enqueue.

from taskq import Client, handler

@handler("email:deliver", queue="critical", max_retry=5)
def deliver(task):
    send(task.json()["to"])

Client().enqueue("email:deliver", {"to": "ada@example.com"})  # $REDIS_URL, or the Redis Django registered
"""

from .aggregation import AggregatorRegistry, GroupSettings, aggregator, aggregators
from .aio import AsyncClient
from .broker.connection import DEFAULT_REDIS_URL, connect, warn_if_evicting
from .client import Client, configure, configure_from_settings, default_client
from .clock import Clock, FakeClock, SystemClock
from .errors import (
    AlreadyExistsError,
    DuplicateTaskError,
    EngineError,
    FailedPreconditionError,
    HandlerNotFoundError,
    LayoutVersionError,
    LeaseLostError,
    MessageVersionError,
    MissingExtraError,
    NotFoundError,
    PayloadTooDeepError,
    QueueNotEmptyError,
    QueueNotFoundError,
    RedisUnavailableError,
    RetryWithoutFailure,
    ServerNotFoundError,
    SkipRetry,
    TaskCancelledError,
    TaskIdConflictError,
    TaskNotFoundError,
    ValidationError,
)
from .handlers import Handler, Registry, Task, default_retry_delay, handler, registry
from .inspector import DailyStats, Inspector, QueueInfo, SearchResult, TaskEvent
from .keys import DEFAULT_PREFIX, STATES, Keys
from .layout import LAYOUT_VERSION
from .message import TaskInfo, TaskMessage
from .periodic import Entry as PeriodicEntry
from .periodic import ScheduleRegistry, schedule, schedules
from .producer_flows import BulkEnqueueError
from .server_records import ServerInfo
from .transitions import Limits
from .workflows import MemberInfo, WorkflowInfo, chain, chord, parallel, sig

__all__ = [
    "AsyncClient",
    "BulkEnqueueError",
    "Client",
    "Clock",
    "configure",
    "configure_from_settings",
    "connect",
    "DailyStats",
    "default_client",
    "DEFAULT_PREFIX",
    "DEFAULT_REDIS_URL",
    "default_retry_delay",
    "AlreadyExistsError",
    "DuplicateTaskError",
    "EngineError",
    "FailedPreconditionError",
    "FakeClock",
    "Handler",
    "handler",
    "HandlerNotFoundError",
    "Inspector",
    "Keys",
    "LAYOUT_VERSION",
    "LayoutVersionError",
    "LeaseLostError",
    "Limits",
    "MessageVersionError",
    "MissingExtraError",
    "NotFoundError",
    "PayloadTooDeepError",
    "QueueInfo",
    "QueueNotEmptyError",
    "QueueNotFoundError",
    "ServerNotFoundError",
    "RedisUnavailableError",
    "Registry",
    "registry",
    "RetryWithoutFailure",
    "SearchResult",
    "ServerInfo",
    "SkipRetry",
    "STATES",
    "SystemClock",
    "Task",
    "TaskCancelledError",
    "TaskEvent",
    "TaskIdConflictError",
    "TaskInfo",
    "TaskMessage",
    "TaskNotFoundError",
    "ValidationError",
    "warn_if_evicting",
    "aggregator",
    "aggregators",
    "AggregatorRegistry",
    "chain",
    "chord",
    "GroupSettings",
    "MemberInfo",
    "parallel",
    "sig",
    "WorkflowInfo",
    "PeriodicEntry",
    "schedule",
    "ScheduleRegistry",
    "schedules",
]
