"""Checks on everything a producer or operator hands the engine. Each failure is a ValidationError that
names the field, raised before anything is written."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from . import nesting
from .errors import PayloadTooDeepError, ValidationError
from .quoting import CONTROL, FILLERS, HIDDEN_CATEGORIES, is_hidden, shown
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


# Lone UTF-16 surrogates: a Python str may hold them (JSON's "\\ud800", a command line's undecodable bytes), but
# they are not Unicode characters and UTF-8 cannot encode them, so Redis could not be sent the string.
_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=1)
def invisible_class() -> str:
    """The characters a visible name may not hold (``name_problem``), lone surrogates aside (JSON text from a
    conforming client has none), as the inside of a regular expression's character class: for the HTTP API's
    OpenAPI patterns, built from the same categories so the document and the check cannot drift apart. BMP
    characters are written ``\\uXXXX`` (read alike by Python's ``re`` and ECMA-262); others literally."""
    ranges: list[list[int]] = []
    # The planes that hold controls and format characters (the BMP, plane 1, and 14's tags); the others are
    # ideographs, unassigned or private use. One pass over them costs about 0.1 s, once per process.
    category, categories = unicodedata.category, HIDDEN_CATEGORIES
    points = [p for plane in (0, 1, 14) for p in range(plane << 16, (plane + 1) << 16)]
    hidden = sorted({p for p in points if category(chr(p)) in categories} | {ord(c) for c in FILLERS})
    for point in hidden:
        if 0xD800 <= point <= 0xDFFF:
            continue
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])

    def char(point: int) -> str:
        return f"\\u{point:04x}" if point <= 0xFFFF else chr(point)

    return "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges)


def text_problem(value: str) -> str | None:
    """Why ``value`` is not a string taskq can store (it is: every str but one holding a lone surrogate), or
    None. The rule for every string at every way in; names add ``name_problem``'s. ASCII text (CPython knows
    it without a scan) holds no surrogate: a payload's JSON text is scanned only when it holds other characters."""
    surrogate = None if value.isascii() else _SURROGATE.search(value)
    if surrogate is None:
        return None
    return f"holds a lone surrogate (U+{ord(surrogate.group()):04X}), which is not Unicode text: UTF-8 cannot encode it"


def name_problem(value: str, *, visible: bool = True) -> str | None:
    """Why ``value`` is not a name (a queue, type or id), else None: ``text_problem``'s reason or a control
    character; and, for a ``visible`` name (one a new task gets), an invisible character, a blank name, or a
    leading or trailing blank. Readers take names that are not visible, so what an older version wrote stays
    reachable. ASCII names, nearly all, take the quick way."""
    if value.isascii():
        control = CONTROL.search(value)
        hidden = control.group() if control else None
    else:
        problem = text_problem(value)
        if problem:
            return problem
        hidden = next((c for c in value if (is_hidden(c) if visible else CONTROL.match(c))), None)
    if hidden is not None:
        kind = "control" if unicodedata.category(hidden) == "Cc" else "invisible"
        return f"contains {kind} characters (U+{ord(hidden):04X})"
    if visible and not value.strip():
        return "is blank"
    if visible and value != value.strip():
        return "starts or ends with a blank"
    return None


def text(value: Any, what: str, op: str = "") -> str:
    """A string under the rule for every string (``text_problem``): ValidationError naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {shown(value)}", op=op)
    problem = text_problem(value)
    if problem:
        raise ValidationError(f"{what} {shown(value)} {problem}", op=op)
    return value


def encodable(value: str) -> str:
    """``value`` with what UTF-8 cannot encode (lone surrogates) replaced by U+FFFD: for text that is stored
    rather than refused, a failure's error message (a consumer that cut its message inside an emoji must still
    be able to fail its task), and for stored strings shown on a page."""
    return _SURROGATE.sub("\ufffd", value) if not value.isascii() else value


def escape_surrogates(json_text: str) -> str:
    """JSON text printed with ``ensure_ascii=False`` with its lone surrogates written as JSON escapes
    (``\\ud800``), as stored JSON that holds them was written: the same JSON, now text a page can send."""
    if json_text.isascii():
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def name(value: Any, what: str, limit: int, op: str = "", *, visible: bool = True) -> str:
    """A name (``what`` says which) of 1 to ``limit`` characters under ``name_problem``'s rule; ValidationError
    naming ``what`` otherwise."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{what} must be a non-empty string, got {shown(value)}", op=op)
    if len(value) > limit:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {limit}", op=op)
    problem = name_problem(value, visible=visible)
    if problem:
        raise ValidationError(f"{what} {shown(value)} {problem}", op=op)
    return value


def queue_name(value: Any, op: str = "", *, what: str = "queue name", visible: bool = False) -> str:
    """A queue name as any reader takes it: listing, reading, pausing and deleting a queue that already exists.
    Lenient, so names that ``new_queue_name`` refuses and an older version (or another client) wrote stay
    reachable."""
    checked = name(value, what, MAX_QUEUE_NAME, op, visible=visible)
    if "{" in checked or "}" in checked:
        # Braces would break the Redis Cluster hash tag that keeps a queue's keys in one slot.
        raise ValidationError(f"{what} {shown(checked)} may not contain '{{' or '}}'", op=op)
    return checked


#: Characters ``taskworker --queues`` reads as a glob pattern (``worker/config.py``).
GLOB_CHARACTERS = frozenset("*?[")


def new_queue_name(value: Any, op: str = "", *, what: str = "queue name") -> str:
    """A queue name for a new task (enqueue, submit, the API's publish, an edit's move, a queue definition, a
    periodic entry): ``queue_name``, and not ``.`` or ``..`` (a URL path step: the console's ``/queues/../`` would
    be the dashboard), nor a name with ``*``, ``?`` or ``[`` (``taskworker --queues`` would read it as a pattern
    that matches other queues too), and a visible name (``name_problem``). ``/`` stays allowed: URLs write it
    ``~2F``."""
    checked = queue_name(value, op, what=what, visible=True)
    if checked in (".", ".."):
        raise ValidationError(
            f"{what} {shown(checked)} is refused for new tasks: '.' and '..' are steps of a URL path", op=op
        )
    if not GLOB_CHARACTERS.isdisjoint(checked):
        raise ValidationError(
            f"{what} {shown(checked)} may not contain '*', '?' or '[' for new tasks: taskworker --queues reads "
            "them as a glob pattern",
            op=op,
        )
    return checked


def task_type(value: Any, op: str = "", *, what: str = "task type", visible: bool = True) -> str:
    """A task type; a ``visible`` one (``name_problem``) for a new task, and readers take any other too."""
    return name(value, what, MAX_TYPE_NAME, op, visible=visible)


def task_id(value: Any, op: str = "", *, what: str = "task id", visible: bool = False) -> str:
    """A task id as readers take it; a new task's is ``visible`` too (``name_problem``)."""
    return name(value, what, MAX_TASK_ID, op, visible=visible)


def server_id(value: Any, op: str = "") -> str:
    return name(value, "server id", MAX_SERVER_ID, op, visible=False)


def count(value: Any, what: str, low: int, high: int, op: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer, got {shown(value)}", op=op)
    if not low <= value <= high:
        raise ValidationError(f"{what} must be between {low} and {high}, got {shown(value)}", op=op)
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
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            reason = _json_refusal(exc)
            raise ValidationError(f"payload is neither bytes nor JSON-serializable: {reason}", op=op) from None
        except RecursionError:  # json's C encoder stops at Python's recursion limit, long past any sane depth
            raise _too_deep(limits, op) from None
        problem = text_problem(text)
        if problem:
            raise ValidationError(f"payload {problem}", op=op)
        data = text.encode()
        container = True
    if len(data) > limits.max_bytes:
        raise ValidationError(f"payload is {len(data)} bytes; the limit is {limits.max_bytes}", op=op)
    if container and nesting.deeper_than(data, limits.max_depth):
        raise _too_deep(limits, op)
    return data


def _json_refusal(exc: Exception) -> str:
    """What json's encoder refused, in words rather than Python's (its messages name Python types and calls)."""
    reason = str(exc)
    if "NaN" in reason or "Infinity" in reason or "out of range float" in reason.lower():
        return "NaN and infinite numbers are not JSON"
    if "int_max_str_digits" in reason:
        return "a number has more than 4300 digits"
    if "keys must be" in reason:
        return "object keys must be strings, numbers, booleans or null"
    if "circular" in reason.lower():
        return "it refers to itself"
    match = re.search(r"Object of type (\w+) is not JSON serializable", reason)
    return f"{match.group(1)} values are not JSON" if match else "it holds a value JSON cannot write"


def _too_deep(limits: PayloadLimits, op: str) -> PayloadTooDeepError:
    return PayloadTooDeepError(
        f"payload is nested deeper than {limits.max_depth} levels of arrays and objects "
        "(the limit is TASKS_MAX_PAYLOAD_DEPTH)",
        op=op,
    )


def seconds(value: Any, what: str, op: str = "", *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{what} must be a number of seconds, got {shown(value)}", op=op)
    number = float(value)
    if number != number or number < 0 or (number == 0 and not allow_zero) or number > MAX_DURATION:
        # The API's wording (``taskq.queues.api.inputs.number``): a range says both its ends.
        low = "from 0 to" if allow_zero else "more than 0 and at most"
        raise ValidationError(f"{what} must be {low} {MAX_DURATION:.0f} seconds, got {shown(value)}", op=op)
    return number


def instant(value: Any, what: str, op: str = "") -> float:
    """A point in time as epoch seconds, from a datetime (naive means UTC) or a number."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.timestamp()
    # The upper bound also catches epoch milliseconds passed as seconds, which would be written and then fail
    # to read back (datetime stops at year 9999), breaking every listing of the task's state.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_EPOCH_SECONDS:
        raise ValidationError(f"{what} must be a datetime or epoch seconds, got {shown(value)}", op=op)
    return float(value)


def headers(value: Any, op: str = "") -> dict[str, str]:
    """Headers: at most ``MAX_HEADERS`` pairs of strings under the rule for every string (``text_problem``), each
    name non-empty."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise ValidationError(f"headers must be a dict of at most {MAX_HEADERS} string pairs", op=op)
    for key, val in value.items():
        if not isinstance(key, str) or not isinstance(val, str) or not key:
            raise ValidationError(
                f"header {shown(key)}: a header needs a non-empty name and a string value, got {shown(val)}", op=op
            )
        problem = text_problem(key)
        if problem:
            raise ValidationError(f"header name {shown(key)} {problem}", op=op)
        problem = text_problem(val)
        if problem:
            raise ValidationError(f"header {shown(key)} {problem}", op=op)
    return dict(value)
