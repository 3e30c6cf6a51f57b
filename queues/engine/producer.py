"""Turning a producer's arguments into validated placements: shared by the blocking and asyncio clients.

Options are validated once per call into a ``Template`` (for ``enqueue_many`` that is once for all items
without options of their own), then each item adds its type, payload and id. Nothing here does I/O.

Deliberately shares its name with ``queues/engine/asynq/producer.py``: this module plans taskq's own enqueues,
that one produces into Go asynq's keys.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from . import validation as check
from .clock import from_ms, to_ms
from .errors import ValidationError
from .keys import Keys
from .message import DEFAULT_MAX_RETRY, TaskInfo, TaskMessage, encode_default_options
from .transitions import Placement

if TYPE_CHECKING:
    from .policies import PolicySet

#: Options accepted by ``enqueue`` besides type and payload.
OPTION_NAMES = frozenset(
    {
        "queue",
        "max_retry",
        "timeout",
        "deadline",
        "process_at",
        "process_in",
        "unique",
        "task_id",
        "retention",
        "headers",
    }
)


def new_task_id() -> str:
    return os.urandom(16).hex()


def new_task_ids(n: int) -> list[str]:
    """n random 128-bit ids from one system call."""
    raw = os.urandom(16 * n).hex()
    return [raw[i : i + 32] for i in range(0, 32 * n, 32)]


def unique_digest(payload: bytes) -> str:
    return hashlib.md5(payload, usedforsecurity=False).hexdigest()


@dataclass
class Template:
    """Validated options shared by the tasks of one call."""

    queue: str
    created_ms: int
    max_retry: int = DEFAULT_MAX_RETRY
    timeout: float | None = None
    deadline_ms: int = 0
    retention: float = 0.0
    unique_ttl: float = 0.0
    process_at_ms: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    task_id: str | None = None
    encoded: bytes = b""
    # Whether the caller gave these: a policy's default applies only to what the caller left out.
    retention_given: bool = False
    unique_given: bool = False

    def message(self, task_id: str, task_type: str, payload: bytes) -> TaskMessage:
        return TaskMessage(
            task_id,
            task_type,
            payload,
            self.queue,
            self.max_retry,
            self.timeout,
            self.deadline_ms,
            self.retention,
            self.unique_ttl,
            self.headers,
            self.created_ms,
        )


def template(now: float, options: Mapping[str, Any], op: str) -> Template:
    """Validate the options of a call. Raises ValidationError."""
    if not OPTION_NAMES.issuperset(options):
        unknown = set(options) - OPTION_NAMES
        raise ValidationError(f"unknown option(s): {', '.join(sorted(unknown))}", op=op)
    t = Template(check.new_queue_name(options.get("queue", "default"), op), to_ms(now))
    if len(options) > ("queue" in options):  # options besides the queue (most calls give none)
        _check_options(t, now, options, op)
        t.encoded = t.message("", "", b"").encode_options()
    else:
        t.encoded = encode_default_options(t.created_ms)
    return t


def _check_options(t: Template, now: float, options: Mapping[str, Any], op: str) -> None:
    """The options of a call other than its queue, validated into ``t``."""
    if options.get("task_id") is not None:
        t.task_id = check.task_id(options["task_id"], op, visible=True)
    if options.get("max_retry") is not None:
        t.max_retry = check.count(options["max_retry"], "max_retry", 0, check.MAX_RETRY_LIMIT, op)
    if options.get("timeout") is not None:
        t.timeout = check.seconds(options["timeout"], "timeout", op)
    if options.get("deadline") is not None:
        t.deadline_ms = to_ms(check.instant(options["deadline"], "deadline", op))
    if options.get("retention") is not None:
        t.retention = check.seconds(options["retention"], "retention", op, allow_zero=True)
        t.retention_given = True
    if options.get("unique") is not None:
        t.unique_ttl = check.seconds(options["unique"], "unique", op)
        t.unique_given = True
    t.headers = check.headers(options.get("headers"), op)
    t.process_at_ms = _process_at(now, options, op)


def _process_at(now: float, options: Mapping[str, Any], op: str) -> int:
    at, delay = options.get("process_at"), options.get("process_in")
    if at is not None and delay is not None:
        raise ValidationError("give process_at or process_in, not both", op=op)
    if delay is not None:
        seconds = check.seconds(delay, "process_in", op, allow_zero=True)
        return to_ms(now + seconds) if seconds else 0
    if at is not None:
        return to_ms(check.instant(at, "process_at", op))
    return 0


def with_policies(t: Template, task_type: str, policies: PolicySet | None) -> Template:
    """The template with the policies' unique TTL and retention for this type where the caller gave none."""
    if policies is None or (t.retention_given and t.unique_given):
        return t
    unique_default, retention_default = policies.task_defaults(t.queue, task_type)
    unique = t.unique_ttl if t.unique_given else unique_default or 0.0
    retention = t.retention if t.retention_given else retention_default or 0.0
    if unique == t.unique_ttl and retention == t.retention:
        return t
    own = replace(t, unique_ttl=unique, retention=retention)
    own.encoded = own.message("", "", b"").encode_options()
    return own


#: Per call of ``plan_many``, for the tasks of its shared template: type -> the type validated and the template
#: with that type's policies. The tasks of one call mostly share a few types, so each is checked once.
TypeMemo = dict[str, tuple[str, Template]]


def place(
    keys: Keys,
    t: Template,
    task_type: Any,
    payload: Any,
    task_id: str,
    op: str,
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    policies: PolicySet | None = None,
    memo: TypeMemo | None = None,
) -> Placement:
    """One task of a call: its type and payload validated, the policies' defaults applied, its unique key
    derived."""
    known = memo.get(task_type) if memo is not None and type(task_type) is str else None
    if known is None:
        checked = check.task_type(task_type, op)
        known = (checked, with_policies(t, checked, policies))
        if memo is not None:
            memo[checked] = known
    task_type, t = known
    message = t.message(task_id, task_type, check.payload(payload, op, limits))
    placement = Placement(message, t.process_at_ms, encoded_options=t.encoded, fresh_id=not t.task_id)
    if t.unique_ttl:
        placement.unique_key = keys.queue(t.queue).unique(message.type, unique_digest(message.payload))
        # asynq's rule: a scheduled task holds its lock for the ttl past its process time, so no duplicate
        # slips in while it waits.
        placement.unique_ttl_ms = max(1, to_ms(t.unique_ttl) + max(0, t.process_at_ms - t.created_ms))
    return placement


def plan(
    keys: Keys,
    now: float,
    task_type: Any,
    payload: Any,
    options: Mapping[str, Any],
    op: str,
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    policies: PolicySet | None = None,
) -> Placement:
    """Validate one task's arguments and decide where it goes. Raises ValidationError; writes nothing."""
    t = template(now, options, op)
    return place(keys, t, task_type, payload, t.task_id or new_task_id(), op, limits, policies)


def plan_many(
    keys: Keys,
    now: float,
    items: Iterable[Any],
    options: Mapping[str, Any],
    op: str,
    limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    policies: PolicySet | None = None,
) -> list[Placement]:
    """Items are (type, payload) pairs or dicts with ``type``, ``payload`` and per-task options, which win over
    the shared ``options``. Every item is validated before any is written."""
    items = list(items)
    shared = template(now, options, op)
    ids = new_task_ids(len(items))
    placements = []
    memo: TypeMemo = {}
    for index, item in enumerate(items):
        pair = type(item) is tuple or isinstance(item, (tuple, list))  # the exact type first: the common case
        if not (pair and len(item) == 2) and not isinstance(item, Mapping):
            raise ValidationError(f"item {index} is neither a (type, payload) pair nor a dict", op=op)
        try:
            if not pair:
                own = dict(item)
                task_type, payload = own.pop("type", None), own.pop("payload", b"")
                t = template(now, {**options, **own}, op) if own else shared
            else:
                t, (task_type, payload) = shared, item
            placements.append(
                place(
                    keys,
                    t,
                    task_type,
                    payload,
                    t.task_id or ids[index],
                    op,
                    limits,
                    policies,
                    memo if t is shared else None,
                )
            )
        except ValidationError as exc:
            raise ValidationError(f"item {index}: {exc.message}", op=op) from None
    return placements


# The tasks of one call share their instants (created, enqueued, mostly the process time and deadline), and a
# datetime is immutable, so the infos of a call share one object per instant instead of building 4 per task.
_instant = lru_cache(maxsize=256)(from_ms)


def info_of(placement: Placement, now_ms: int) -> TaskInfo:
    """The TaskInfo of a task just enqueued, without reading it back."""
    m = placement.message
    scheduled = placement.process_at_ms > now_ms
    return TaskInfo(
        id=m.id,
        type=m.type,
        queue=m.queue,
        state="scheduled" if scheduled else "pending",
        payload=m.payload,
        max_retry=m.max_retry,
        timeout=m.effective_timeout(),
        deadline=_instant(m.deadline_ms),
        retention=m.retention,
        unique_key=placement.unique_key or None,
        headers=m.headers,
        created_at=_instant(m.created_ms),
        next_process_at=_instant(placement.process_at_ms or now_ms),
        state_since=_instant(now_ms),
    )


def by_queue(placements: list[Placement]) -> dict[str, list[Placement]]:
    groups: dict[str, list[Placement]] = {}
    for placement in placements:
        groups.setdefault(placement.message.queue, []).append(placement)
    return groups


def chunks(items: list[Placement], size: int) -> Iterable[list[Placement]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
