"""What a request may hold, checked before the engine sees it, with messages for people who do not read Python:
values shown as JSON (``true``, ``null``), each field named once, ranges stated as ranges. The OpenAPI document
(``openapi.py``) builds its patterns and bounds from the constants here, so the two say the same thing.

Every optional field given as ``null`` takes its default, as if it were absent (JSON encoders write ``null`` for
an unset member). A check that fails raises ``InvalidArgument``, which the views answer with a 400 naming the
field. Names and strings are checked by the engine's one rule (``taskq.queues.engine.validation``), its refusal named
against the request's field here.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from taskq.queues import segments
from taskq.queues.engine import ValidationError
from taskq.queues.engine import validation as check
from taskq.queues.engine.quoting import shown
from taskq.queues.engine.validation import MAX_HEADERS

#: C0 and C1 control characters and DEL, which no queue name, task id or type may hold (the engine's checks).
CONTROL = "\\x00-\\x1f\\x7f-\\x9f"
#: Characters a new queue may not hold: ``taskworker --queues`` reads them as a glob pattern.
GLOB = "*?["
#: The strict form ``payload_base64`` must have: groups of four, padded.
BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_BASE64 = re.compile(BASE64)
#: A dead-letter listing's cursor: archive time in ms, then the task id's UTF-8 in hex (``views.encode_cursor``).
CURSOR_PATTERN = "^[0-9]{1,16}-(?:[0-9a-f]{2}){1,512}$"
CURSOR = re.compile(CURSOR_PATTERN)
MAX_LEASE = 256  # characters of a lease token (the engine's are far shorter)
MAX_DEAD_LETTER_PAGE = 100  # dead letters one listing returns
MAX_DEAD_LETTER_BATCH = 1_000_000  # dead letters one respawn or delete moves


class InvalidArgument(Exception):
    """A 400: ``field`` is the request field (or path segment, or query parameter) at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# -- names -------------------------------------------------------------------------------------------------


def _checked(field: str, check_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The engine's check (``taskq.queues.engine.validation``, the one rule for names and strings), its refusal as an
    InvalidArgument naming ``field``."""
    try:
        return check_fn(*args, **kwargs)
    except ValidationError as exc:
        raise InvalidArgument(field, exc.message) from None


def queue(value: Any, field: str = "queue") -> str:
    """A queue name as readers take it (any queue already in Redis stays reachable)."""
    return str(_checked(field, check.queue_name, value, "api", what=field))


def new_queue(value: Any, field: str = "queue") -> str:
    """A queue name for a new task: also visible, not ``.`` or ``..`` (steps of a URL path) nor with ``*``, ``?``
    or ``[`` (``taskworker --queues`` would read it as a pattern)."""
    return str(_checked(field, check.new_queue_name, value, "api", what=field))


def task_id(value: Any, field: str = "id", *, new: bool = False) -> str:
    """A task id: any a reader may name, or for a ``new`` task a visible one."""
    return str(_checked(field, check.task_id, value, "api", what=field, visible=new))


def task_type(value: Any) -> str:
    return str(_checked("type", check.task_type, value, "api", what="type"))


def segment(value: str, field: str) -> str:
    """A path segment's name: ``~2F`` is ``/``, ``~7E`` is ``~``, ``~2E`` is ``.`` (``taskq.queues.segments``)."""
    try:
        unescaped: str = segments.unescape_segment(value)
    except ValueError as exc:
        raise InvalidArgument(field, f"{field}: {exc}") from None
    return unescaped


# -- values ------------------------------------------------------------------------------------------------


def number(doc: dict[str, Any], field: str, high: float, *, zero: bool, default: float | None = None) -> float | None:
    """Seconds: from 0 (``zero``) or more than 0, to ``high``."""
    value = doc.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(field, f"{field} must be a number of seconds, got {shown(value)}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero) or value > high:
        low = "from 0 to" if zero else "more than 0 and at most"
        raise InvalidArgument(field, f"{field} must be {low} {_number_text(high)} seconds, got {shown(value)}")
    return float(value)


def integer(doc: dict[str, Any], field: str, low: int, high: int, default: int | None = None) -> int | None:
    """A whole number from ``low`` to ``high``; ``2.0`` counts (JSON does not tell it from ``2``)."""
    value = doc.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise InvalidArgument(field, f"{field} must be a whole number, got {shown(value)}")
    if not low <= value <= high:
        raise InvalidArgument(field, f"{field} must be from {low} to {high}, got {shown(value)}")
    return int(value)


def boolean(doc: dict[str, Any], field: str) -> bool:
    value = doc.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidArgument(field, f"{field} must be true or false, got {shown(value)}")
    return value


def text(doc: dict[str, Any], field: str) -> str:
    """A string field ("" when absent), under the rule for every string (``validation.text_problem``)."""
    value = doc.get(field)
    if value is None:
        return ""
    return str(_checked(field, check.text, value, field, "api"))


def error_text(doc: dict[str, Any], field: str) -> str:
    """A failure's error message ("" when absent): any string, stored with what UTF-8 cannot encode replaced
    (``validation.encodable``) rather than refused, so a consumer that cut its message inside an emoji can still
    fail its task."""
    value = doc.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidArgument(field, f"{field} must be a string, got {shown(value)}")
    return check.encodable(value)


def headers(value: Any) -> dict[str, str]:
    """An object of at most ``MAX_HEADERS`` members, each a non-empty name with a string value, every string under
    the rule for every string (the engine's ``validation.headers``)."""
    if not isinstance(value, dict):
        raise InvalidArgument("headers", f"headers must be an object of at most {MAX_HEADERS} string members")
    return dict(_checked("headers", check.headers, value, "api"))


def base64_bytes(value: Any, field: str) -> bytes:
    if not isinstance(value, str) or not _BASE64.fullmatch(value):
        raise InvalidArgument(field, f"{field} must be standard base64 (A-Z a-z 0-9 + /, padded with =)")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):  # the pattern above admits nothing this refuses; kept as a backstop
        raise InvalidArgument(field, f"{field} is not valid base64") from None


def query_integer(raw: str | None, field: str, low: int, high: int, default: int) -> int:
    if raw is None:
        return default
    if not re.fullmatch(r"-?[0-9]{1,12}", raw):
        raise InvalidArgument(field, f"{field} must be a whole number, got {shown(raw)}")
    value = integer({field: int(raw)}, field, low, high)
    assert value is not None
    return value
