"""Checks on everything a producer or operator hands the engine. Each failure is a ValidationError that
names the field, raised before anything is written."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import nesting
from .errors import PayloadTooDeepError, ValidationError
from .settings import DEFAULTS

MAX_QUEUE_NAME = 128
MAX_TYPE_NAME = 256
MAX_TASK_ID = 128
MAX_SERVER_ID = 320  # host name (at most 253) : pid : 8 hex digits
MAX_PAYLOAD_BYTES = 1024 * 1024
MAX_RETRY_LIMIT = 1000
MAX_DURATION = 366 * 24 * 3600.0  # a year and a day: longer is almost surely a unit mistake
MAX_HEADERS = 64
MAX_EPOCH_SECONDS = 253_402_300_799.0  # 9999-12-31T23:59:59Z, the last instant a datetime can hold


# C0 and C1 control characters and DEL; a compiled class is several times faster than a per-character loop,
# and every enqueue validates its queue and type names.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def _name(value: Any, what: str, limit: int, op: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{what} must be a non-empty string, got {value!r:.80}", op=op)
    if len(value) > limit:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {limit}", op=op)
    if _has_control(value):
        raise ValidationError(f"{what} {value!r:.80} contains control characters", op=op)
    return value


def queue_name(value: Any, op: str = "") -> str:
    """A queue name as any reader takes it: listing, reading, pausing and deleting a queue that already exists.
    Lenient, so names that ``new_queue_name`` refuses and an older version (or another client) wrote stay
    reachable."""
    name = _name(value, "queue name", MAX_QUEUE_NAME, op)
    if "{" in name or "}" in name:
        # Braces would break the Redis Cluster hash tag that keeps a queue's keys in one slot.
        raise ValidationError(f"queue name {name!r} may not contain '{{' or '}}'", op=op)
    return name


#: Characters ``taskworker --queues`` reads as a glob pattern (``worker/config.py``).
GLOB_CHARACTERS = frozenset("*?[")


def new_queue_name(value: Any, op: str = "") -> str:
    """A queue name for a new task (enqueue, submit, the API's publish, an edit's move, a queue definition, a
    periodic entry): ``queue_name``, and not ``.`` or ``..`` (a URL path step: the console's ``/queues/../`` would
    be the dashboard), nor a name with ``*``, ``?`` or ``[`` (``taskworker --queues`` would read it as a pattern
    that matches other queues too). ``/`` stays allowed: URLs write it ``~2F``."""
    name = queue_name(value, op)
    if name in (".", ".."):
        raise ValidationError(
            f"queue name {name!r} is refused for new tasks: '.' and '..' are steps of a URL path", op=op
        )
    if not GLOB_CHARACTERS.isdisjoint(name):
        raise ValidationError(
            f"queue name {name!r} may not contain '*', '?' or '[' for new tasks: taskworker --queues reads "
            "them as a glob pattern",
            op=op,
        )
    return name


def task_type(value: Any, op: str = "") -> str:
    return _name(value, "task type", MAX_TYPE_NAME, op)


def task_id(value: Any, op: str = "") -> str:
    return _name(value, "task id", MAX_TASK_ID, op)


def server_id(value: Any, op: str = "") -> str:
    return _name(value, "server id", MAX_SERVER_ID, op)


def count(value: Any, what: str, low: int, high: int, op: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer, got {value!r:.80}", op=op)
    if not low <= value <= high:
        raise ValidationError(f"{what} must be between {low} and {high}, got {value}", op=op)
    return value


@dataclass(frozen=True)
class PayloadLimits:
    """How large and how deeply nested a payload may be (``Client(max_payload=…, max_payload_depth=…)``)."""

    max_bytes: int = MAX_PAYLOAD_BYTES
    max_depth: int = DEFAULTS.max_payload_depth

    def __post_init__(self) -> None:
        count(self.max_bytes, "max_payload", 1, 2**31 - 1, "client")
        count(self.max_depth, "max_payload_depth", 1, nesting.DEPTH_CEILING, "client")


DEFAULT_PAYLOAD_LIMITS = PayloadLimits()


def payload(value: Any, op: str = "", limits: PayloadLimits = DEFAULT_PAYLOAD_LIMITS) -> bytes:
    """Bytes pass through; anything else is stored as compact JSON. Either way, JSON (and bytes that read as a JSON
    array or object, as the console will read them) nested deeper than ``limits.max_depth`` is refused."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        container = nesting.looks_like_json_container(data)
    else:
        try:
            data = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"payload is neither bytes nor JSON-serializable: {exc}", op=op) from None
        except RecursionError:  # json's C encoder stops at Python's recursion limit, long past any sane depth
            raise _too_deep(limits, op) from None
        container = True
    if len(data) > limits.max_bytes:
        raise ValidationError(f"payload is {len(data)} bytes; the limit is {limits.max_bytes}", op=op)
    if container and nesting.deeper_than(data, limits.max_depth):
        raise _too_deep(limits, op)
    return data


def _too_deep(limits: PayloadLimits, op: str) -> PayloadTooDeepError:
    return PayloadTooDeepError(
        f"payload is nested deeper than {limits.max_depth} levels of arrays and objects "
        "(the limit is TASKS_MAX_PAYLOAD_DEPTH)",
        op=op,
    )


def seconds(value: Any, what: str, op: str = "", *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{what} must be a number of seconds, got {value!r:.80}", op=op)
    number = float(value)
    if number != number or number < 0 or (number == 0 and not allow_zero) or number > MAX_DURATION:
        low = "0" if allow_zero else "more than 0"
        raise ValidationError(f"{what} must be {low} and at most {MAX_DURATION:.0f} seconds, got {value}", op=op)
    return number


def instant(value: Any, what: str, op: str = "") -> float:
    """A point in time as epoch seconds, from a datetime (naive means UTC) or a number."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.timestamp()
    # The upper bound also catches epoch milliseconds passed as seconds, which would be written and then fail
    # to read back (datetime stops at year 9999), breaking every listing of the task's state.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_EPOCH_SECONDS:
        raise ValidationError(f"{what} must be a datetime or epoch seconds, got {value!r:.80}", op=op)
    return float(value)


def headers(value: Any, op: str = "") -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise ValidationError(f"headers must be a dict of at most {MAX_HEADERS} string pairs", op=op)
    for key, val in value.items():
        if not isinstance(key, str) or not isinstance(val, str) or not key:
            raise ValidationError(f"header {key!r:.40}: names and values must be strings", op=op)
    return dict(value)
