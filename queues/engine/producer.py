"""Turning a producer's arguments into validated placements: shared by the blocking and asyncio clients."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from . import validation as check
from .clock import to_ms
from .errors import ValidationError
from .keys import Keys
from .message import TaskInfo, TaskMessage
from .transitions import Placement

#: Options accepted by ``enqueue`` besides type and payload.
OPTION_NAMES = frozenset(
    {"queue", "max_retry", "timeout", "deadline", "process_at", "process_in", "unique", "task_id", "retention",
     "headers"}
)

#: How long a client trusts that it registered a queue in the global queue set (so a deleted queue that
#: producers keep using comes back within this time, at the cost of one SADD per queue per interval).
QUEUE_REGISTRATION_TTL = 5.0


def new_task_id() -> str:
    return uuid.uuid4().hex


def unique_digest(payload: bytes) -> str:
    return hashlib.md5(payload, usedforsecurity=False).hexdigest()


def plan(keys: Keys, now: float, task_type: Any, payload: Any, options: Mapping[str, Any], op: str,
         max_payload: int = check.MAX_PAYLOAD_BYTES) -> Placement:
    """Validate one task's arguments and decide where it goes. Raises ValidationError; writes nothing."""
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise ValidationError(f"unknown option(s): {', '.join(sorted(unknown))}", op=op)
    queue = check.queue_name(options.get("queue", "default"), op)
    message = TaskMessage(
        id=check.task_id(options["task_id"], op) if options.get("task_id") is not None else new_task_id(),
        type=check.task_type(task_type, op),
        payload=check.payload(payload, op, max_payload),
        queue=queue,
        created_ms=to_ms(now),
    )
    if options.get("max_retry") is not None:
        message.max_retry = check.count(options["max_retry"], "max_retry", 0, check.MAX_RETRY_LIMIT, op)
    if options.get("timeout") is not None:
        message.timeout = check.seconds(options["timeout"], "timeout", op)
    if options.get("deadline") is not None:
        message.deadline_ms = to_ms(check.instant(options["deadline"], "deadline", op))
    if options.get("retention") is not None:
        message.retention = check.seconds(options["retention"], "retention", op, allow_zero=True)
    message.headers = check.headers(options.get("headers"), op)
    placement = Placement(message, process_at_ms=_process_at(now, options, op))
    if options.get("unique") is not None:
        ttl = check.seconds(options["unique"], "unique", op)
        message.unique_ttl = ttl
        placement.unique_key = keys.queue(queue).unique(message.type, unique_digest(message.payload))
        placement.unique_ttl_ms = max(1, to_ms(ttl))
    return placement


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


def plan_many(keys: Keys, now: float, items: Iterable[Any], options: Mapping[str, Any], op: str,
              max_payload: int = check.MAX_PAYLOAD_BYTES) -> list[Placement]:
    """Items are (type, payload) pairs or dicts with ``type``, ``payload`` and per-task options, which win over
    the shared ``options``. Every item is validated before any is written."""
    placements = []
    for index, item in enumerate(items):
        if isinstance(item, Mapping):
            fields = dict(item)
            task_type, payload = fields.pop("type", None), fields.pop("payload", b"")
            merged = {**options, **fields}
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            (task_type, payload), merged = item, dict(options)
        else:
            raise ValidationError(f"item {index} is neither a (type, payload) pair nor a dict", op=op)
        try:
            placements.append(plan(keys, now, task_type, payload, merged, op, max_payload))
        except ValidationError as exc:
            raise ValidationError(f"item {index}: {exc.message}", op=op) from None
    return placements


def info_of(placement: Placement, now_ms: int) -> TaskInfo:
    """The TaskInfo of a task just enqueued, without reading it back."""
    message = placement.message
    scheduled = placement.process_at_ms > now_ms
    info = TaskInfo.from_hash(message.id, message.queue, {
        b"type": message.type.encode(), b"payload": message.payload, b"msg": message.encode_options(),
        b"state": b"scheduled" if scheduled else b"pending", b"since": str(now_ms).encode(),
    }, score=placement.process_at_ms if scheduled else None)
    info.unique_key = placement.unique_key or None
    return info


def by_queue(placements: list[Placement]) -> dict[str, list[Placement]]:
    groups: dict[str, list[Placement]] = {}
    for placement in placements:
        groups.setdefault(placement.message.queue, []).append(placement)
    return groups


def chunks(items: list[Placement], size: int) -> Iterable[list[Placement]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]

