"""How deep JSON nests, measured without recursion, and JSON read with a bound on it.

Python's ``json`` parses and prints nested arrays and objects recursively, and so does every walk over the parsed
value (redaction's key masking, search, pretty-printing). A payload nested a few hundred levels deep then raises
RecursionError wherever it is read. So producers are refused a payload deeper than a limit (``TASKS_MAX_PAYLOAD_DEPTH``;
see ``validation.payload``), and every reader of stored bytes parses through ``loads`` here, which
measures first and refuses deeper data (written by an older version or another client) with ``TooDeepError``
instead of recursing into it.

The measure works on the text: the deepest run of ``[`` and ``{`` not closed yet, outside JSON strings. It is
linear and runs in C (a regex removes the strings, ``bytes.translate`` keeps the brackets, and a running sum over
``itertools.accumulate`` finds the deepest point), so checking a 1 MiB payload costs about as much as encoding it.
"""

from __future__ import annotations

import json
import operator
import re
from itertools import accumulate, count
from typing import Any

#: The most the setting may be, and the depth up to which readers parse stored JSON. Every recursive walk of a
#: parsed payload (json's printer, redaction, search) stays this many frames deep, far inside Python's limit.
DEPTH_CEILING = 128

# A JSON string, with its escapes; possessive, so a long string is one linear scan with no backtracking.
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
# Openers become 2 and closers 0 (everything else is deleted), so the running sum minus the position is the
# depth at each point: +1 per opener, -1 per closer.
_BRACKETS = bytes(range(256)).translate(bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00"))
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CONTAINER_START = re.compile(rb"[ \t\r\n]*[\[{]")


class TooDeepError(ValueError):
    """Stored JSON nested deeper than a reader parses. A ValueError, so code that falls back for data that is not
    JSON still falls back rather than failing; code that shows or masks data handles it by name."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit


def depth(data: bytes | str) -> int:
    """The deepest nesting of arrays and objects in JSON text (0 for a scalar); brackets inside strings do not
    count. Text that is not JSON gets a number too (its unclosed brackets), never an error."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if not (b"[" in raw or b"{" in raw):
        return 0
    if b'"' in raw:
        raw = _STRING.sub(b"", raw)
    steps = raw.translate(_BRACKETS, _NOT_BRACKETS)
    return max(0, max(map(operator.sub, accumulate(steps), count(1)), default=0))


def deeper_than(data: bytes | str, limit: int) -> bool:
    """Whether ``depth(data) > limit``; answers at once for text with at most ``limit`` brackets (most payloads)."""
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return False
    elif data.count(b"[") + data.count(b"{") <= limit:
        return False
    return depth(data) > limit


def value_deeper_than(value: Any, limit: int) -> bool:
    """Whether a Python value nests dicts, lists and tuples deeper than ``limit``, found without recursion and
    stopping at the first branch past it: for callers that must check a value before code that walks it
    recursively (the Django Tasks framework normalizes a task's arguments that way)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list | tuple):
            continue
        if level + 1 > limit:
            return True
        stack.extend((child, level + 1) for child in item)
    return False


class DuplicateKeyError(ValueError):
    """An object that gives one key twice: ``json.loads`` would keep the last silently, and a proxy or another
    reader may keep the first, so the two would disagree on what was sent. Readers that take input refuse it."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {json.dumps(key)} is given twice in one object")
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return doc


def loads(data: bytes | str, limit: int = DEPTH_CEILING, *, unique_keys: bool = False) -> Any:
    """``json.loads(data)``, or TooDeepError when the text nests deeper than ``limit``; ValueError (with
    UnicodeDecodeError) for text that is not JSON, as ``json.loads`` raises; with ``unique_keys``,
    DuplicateKeyError for an object that gives a key twice (input, where the last one would win silently)."""
    if deeper_than(data, limit):
        raise TooDeepError(limit)
    if unique_keys:
        return json.loads(data, object_pairs_hook=_unique_pairs)
    return json.loads(data)


def reason(exc: ValueError) -> str:
    """Why text is not JSON, in words for people who do not read Python (json's own messages name Python calls
    and codecs): where the syntax breaks, bytes that are not UTF-8, a key given twice, a number too long."""
    if isinstance(exc, (TooDeepError, DuplicateKeyError)):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at position {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg.lower()} at line {exc.lineno}, column {exc.colno}"
    if "int_max_str_digits" in str(exc) or "integer string conversion" in str(exc):
        return "a number has more than 4300 digits"
    return "it cannot be read as JSON"


def looks_like_json_container(data: bytes) -> bool:
    """Whether bytes begin (after whitespace) with ``[`` or ``{``: how readers will take them, and so the bytes
    payloads the depth limit applies to (other bytes are opaque and never parsed as nested JSON)."""
    return _CONTAINER_START.match(data) is not None
