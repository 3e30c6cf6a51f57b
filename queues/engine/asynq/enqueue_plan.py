"""What an enqueue in asynq's format writes, decided without I/O: the blocking and the asyncio asynq clients
(``producer``) both drive ``enqueue_flow``.

The rules are those of asynq's Go client (v0.26, ``client.go``), so a task made here cannot be told from one Go made:

- max retry 25 unless given; a task id is a UUID4 string unless given;
- the timeout is 30 minutes when neither a timeout nor a deadline is given; times are kept as whole seconds
  (timeout, retention and the unique lock's TTL cut to the second, the deadline and the process time floored to
  it), so a timeout or lock under one second is refused rather than stored as "none";
- a process time after now schedules the task; otherwise a group puts it in that group (aggregating), and without
  one it is pending at once;
- a unique task takes the lock ``asynq:{queue}:unique:<type>:<md5 of payload>`` holding its id, for the TTL, or for
  a scheduled task until the TTL has passed after its process time;
- the queue's name is added to ``asynq:queues`` before its first task (once per client, as Go's client does).

A payload is bytes as given, ``None`` for Go's nil (no payload: a unique lock then takes no digest), or any other
value as compact JSON, as taskq's ``Client`` writes it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypedDict

from .. import validation as check
from ..aggregation import group_name
from ..errors import DuplicateTaskError, TaskIdConflictError, ValidationError
from ..message import TaskInfo
from ..quoting import shown
from ..sans_io import Flow, command
from ..transitions import Call
from ..validation import PayloadLimits
from .keys import ALL_QUEUES, AsynqQueueKeys
from .scripts import call
from .task_info import task_info
from .wire import WireTask

OP = "asynq.enqueue"
DEFAULT_MAX_RETRY = 25
DEFAULT_TIMEOUT = 30 * 60  # seconds, written when neither a timeout nor a deadline is given


class AsynqEnqueueOptions(TypedDict, total=False):
    """The options of ``AsynqClient.enqueue``: asynq's client options, by taskq's names. Durations are seconds
    (int or float) or a ``timedelta``; times a ``datetime`` (naive means UTC) or Unix seconds."""

    queue: str
    max_retry: int | None
    timeout: float | timedelta | None
    deadline: datetime | float | None
    unique_ttl: float | timedelta | None
    process_at: datetime | float | None
    process_in: float | timedelta | None
    task_id: str | None
    retention: float | timedelta | None
    group: str | None
    headers: dict[str, str] | None


OPTION_NAMES = frozenset(AsynqEnqueueOptions.__annotations__)


@dataclass(frozen=True)
class AsynqPlacement:
    """One validated task and where it goes: ``state`` is pending, scheduled or aggregating."""

    message: WireTask
    encoded: bytes
    state: str
    now_ns: int
    score: int = 0  # the process time (scheduled) or now (aggregating), Unix seconds
    unique_key: str = ""
    unique_ttl: int = 0  # whole seconds; 0 for a task without a lock

    @property
    def keys(self) -> AsynqQueueKeys:
        return AsynqQueueKeys(self.message.queue)


def plan(now: float, task_type: Any, payload: Any, options: Mapping[str, Any], limits: PayloadLimits) -> AsynqPlacement:
    """Validate one enqueue's arguments and decide what it writes. Raises ValidationError naming the option;
    writes nothing."""
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise ValidationError(f"unknown option(s): {', '.join(sorted(unknown))}", op=OP)
    max_retry = _given(options, "max_retry", lambda v: check.count(v, "max_retry", 0, check.MAX_RETRY_LIMIT, OP))
    timeout = _given(options, "timeout", lambda v: int(_at_least_a_second(v, "timeout"))) or 0
    deadline = _given(options, "deadline", lambda v: math.floor(check.instant(v, "deadline", OP))) or 0
    message = WireTask(
        type=check.task_type(task_type, OP),
        payload=b"" if payload is None else check.payload(payload, OP, limits),
        headers=check.headers(options.get("headers"), OP),
        id=_given(options, "task_id", lambda v: check.task_id(v, OP, visible=True)) or str(uuid.uuid4()),
        queue=check.new_queue_name(options.get("queue", "default"), OP),
        retry=DEFAULT_MAX_RETRY if max_retry is None else max_retry,
        timeout=DEFAULT_TIMEOUT if not timeout and not deadline else timeout,
        deadline=deadline,
        group_key=_given(options, "group", lambda v: group_name(v, OP)) or "",
        retention=_given(options, "retention", lambda v: int(_seconds(v, "retention", allow_zero=True))) or 0,
    )
    unique = _given(options, "unique_ttl", lambda v: _at_least_a_second(v, "unique_ttl")) or 0.0
    if unique:
        message.unique_key = AsynqQueueKeys(message.queue).unique(
            message.type, None if payload is None else message.payload
        )
    process_at = _process_at(now, options)
    placement = partial(AsynqPlacement, message, message.encode(), now_ns=int(now * 1e9), unique_key=message.unique_key)
    if process_at is not None and process_at > now:
        # The lock lasts until the TTL has passed after the process time, so no twin slips in while it waits.
        ttl = int(process_at + unique - now) if unique else 0
        return placement("scheduled", score=math.floor(process_at), unique_ttl=ttl)
    if message.group_key:
        return placement("aggregating", score=math.floor(now), unique_ttl=int(unique))
    return placement("pending", unique_ttl=int(unique))


def _given(options: Mapping[str, Any], name: str, checked: Callable[[Any], Any]) -> Any:
    """``checked(value)`` of an option given (not None), else None."""
    value = options.get(name)
    return None if value is None else checked(value)


def _seconds(value: Any, what: str, *, allow_zero: bool = False) -> float:
    """A duration in seconds, given as a number or a ``timedelta``."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return check.seconds(value, what, OP, allow_zero=allow_zero)


def _at_least_a_second(value: Any, what: str) -> float:
    """A duration asynq keeps in whole seconds, where 0 would mean "none": at least one second (Go's client cuts
    the rest off, where it writes it)."""
    seconds = _seconds(value, what)
    if seconds < 1:
        raise ValidationError(f"{what} must be at least 1 second: asynq keeps whole seconds, got {shown(value)}", op=OP)
    return seconds


def _process_at(now: float, options: Mapping[str, Any]) -> float | None:
    at, delay = options.get("process_at"), options.get("process_in")
    if at is not None and delay is not None:
        raise ValidationError("give process_at or process_in, not both", op=OP)
    if delay is not None:
        return now + _seconds(delay, "process_in", allow_zero=True)
    if at is not None:
        return check.instant(at, "process_at", OP)
    return None


def enqueue_call(p: AsynqPlacement) -> Call:
    """The one script that writes ``p``: pending, scheduled or aggregating, with or without a unique lock."""
    m, keys, parse = p.message, p.keys, partial(_outcome, p.message)
    task = keys.task(m.id)
    if p.state == "scheduled":
        if p.unique_ttl:
            unique_keys = [p.unique_key, task, keys.scheduled]
            return call(OP, "enqueue_scheduled_unique", unique_keys, [m.id, p.unique_ttl, p.score, p.encoded], parse)
        return call(OP, "enqueue_scheduled", [task, keys.scheduled], [p.encoded, p.score, m.id], parse)
    if p.state == "aggregating":
        group_keys = [task, keys.group(m.group_key), keys.groups]
        group_args = [p.encoded, m.id, p.score, m.group_key]
        if p.unique_ttl:
            return call(OP, "enqueue_group_unique", [*group_keys, p.unique_key], [*group_args, p.unique_ttl], parse)
        return call(OP, "enqueue_group", group_keys, group_args, parse)
    if p.unique_ttl:
        unique_keys = [p.unique_key, task, keys.pending]
        return call(OP, "enqueue_pending_unique", unique_keys, [m.id, p.unique_ttl, p.encoded, p.now_ns], parse)
    return call(OP, "enqueue_pending", [task, keys.pending], [p.encoded, m.id, p.now_ns], parse)


def _outcome(message: WireTask, reply: Any) -> None:
    """The scripts' replies, as asynq's: 1 written, 0 the id is taken, -1 the unique lock is held."""
    if reply == 0:
        raise TaskIdConflictError(
            f"task id {shown(message.id)} conflicts with another task of queue {shown(message.queue)}", op=OP
        )
    if reply == -1:
        raise DuplicateTaskError(
            f"a {shown(message.type)} task with the same payload holds the unique lock {shown(message.unique_key)}",
            op=OP,
        )


def info_of(p: AsynqPlacement) -> TaskInfo:
    """The TaskInfo of the task just written, as the inspector will read it back (``task_info``)."""
    fields = {b"msg": p.encoded, b"state": p.state.encode()}
    if p.state == "pending":
        fields[b"pending_since"] = str(p.now_ns).encode()
    if p.unique_ttl and p.state != "aggregating":  # asynq names the lock in the hash of these two states only
        fields[b"unique_key"] = p.unique_key.encode()
    if p.state == "aggregating":
        fields[b"group"] = p.message.group_key.encode()
    return task_info(p.message.queue, p.message.id, fields, p.score if p.state == "scheduled" else None)


def enqueue_flow(p: AsynqPlacement, listed: set[str]) -> Flow:
    """Write ``p``: its queue joins ``asynq:queues`` first unless ``listed`` (the queues this client has added
    already) has it, then the one script. Returns the task's TaskInfo; raises DuplicateTaskError or
    TaskIdConflictError, the script having written nothing."""
    queue = p.message.queue
    if queue not in listed:
        yield command("sadd", ALL_QUEUES, queue)
        listed.add(queue)
    yield enqueue_call(p)
    return info_of(p)
