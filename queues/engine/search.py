"""The search language of the console and the CLI: terms ``key:value`` (values comma-separated, quoted when they
hold spaces), all of which a task must match, and bare words searched in its payload and last error.

    queue:critical type:email:* state:retry,archived error:"SMTP 451" payload.to:ada@example.com age:>1h

- ``queue:`` and ``type:`` take names or glob patterns (``*``, ``?``), several separated by commas;
- ``state:`` one or more states; ``id:`` task ids;
- ``error:`` text in the last error (case-insensitive); several ``error:`` terms must all be there;
- ``fingerprint:`` the error group of the last failure (16 hex digits, as the console's error tables link it);
- ``payload.<path>:`` a value in the JSON payload (``payload.user.id:42``, ``payload.items.0.sku:A1``), compared
  as text; a glob pattern works too;
- ``age:>1h`` / ``age:<30m`` the time since the task was created (``s``, ``m``, ``h``, ``d``);
- a bare word (or a quoted phrase) must be in the payload or the last error.

``parse`` raises ``QuerySyntaxError`` (a ValidationError) naming what is wrong and where.

Deliberately shares its name with ``console/views/search.py``, the console's Search page that runs this language
(console views are named after their pages).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import Any

from . import nesting
from .errors import ValidationError
from .failures import FINGERPRINT
from .keys import STATES
from .message import TaskInfo
from .quoting import shown

MAX_QUERY = 1000  # characters
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Every key the language reads, with what it takes: the one list (the error for an unknown key names them, the
#: console's query box offers them as completions, ``search_completion``).
KEY_HELP = {
    "queue": "queues, by name or glob pattern",
    "type": "task types, by name or pattern",
    "state": "task states",
    "id": "task ids",
    "error": "text in the last error (any case)",
    "fingerprint": "the error group of the last failure",
    "age": "time since creation: >1h, <30m",
    "payload.<path>": "a value in the JSON payload",
}
KEYS = tuple(KEY_HELP)
#: The keys whose values are lists of names, comma-separated.
LIST_KEYS = ("queue", "type", "state", "id")
_TOKEN = re.compile(r'\s*(?:([A-Za-z_][\w.]*):)?(?:"((?:[^"\\]|\\.)*)"|(\S+))')


class QuerySyntaxError(ValidationError):
    """A search the language cannot read; nothing was searched."""


@dataclass(frozen=True)
class Query:
    queues: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    fingerprints: tuple[str, ...] = ()
    older_than: float | None = None  # seconds
    newer_than: float | None = None
    payload: tuple[tuple[tuple[str, ...], str], ...] = ()
    words: tuple[str, ...] = ()
    text: str = field(default="", compare=False)

    def queue_matches(self, queue: str) -> bool:
        return not self.queues or any(fnmatch.fnmatchcase(queue, p) for p in self.queues)

    def type_matches(self, task_type: str) -> bool:
        return not self.types or any(fnmatch.fnmatchcase(task_type, p) for p in self.types)


def _fail(text: str, at: int, why: str) -> QuerySyntaxError:
    return QuerySyntaxError(f"{why} (at character {at + 1} of the search {shown(text)})", op="search")


def _seconds(text: str, at: int, value: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value)
    if not match:
        raise _fail(text, at, f"age needs a number and a unit (s, m, h, d), like age:>1h, not {shown(value)}")
    return float(match.group(1)) * UNITS[match.group(2)]


class _Terms:
    """What the terms of a search say, gathered one term at a time."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lists: dict[str, list[str]] = {
            "queue": [], "type": [], "state": [], "id": [], "error": [], "fingerprint": [], "word": [],
        }  # fmt: skip
        self.payload: list[tuple[tuple[str, ...], str]] = []
        self.older: float | None = None
        self.newer: float | None = None

    def add(self, key: str | None, value: str, at: int) -> None:
        if key is None and value.endswith(":") and (value[:-1] in KEYS or value.startswith("payload.")):
            raise _fail(self.text, at, f"{value} needs a value")
        if key is None:
            self.lists["word"].append(value.casefold())
        elif key.startswith("payload.") and len(key) > len("payload."):
            self.payload.append((tuple(key[len("payload.") :].split(".")), value))
        elif key in LIST_KEYS:
            self._names(key, value, at)
        elif key == "error":
            self.lists["error"].append(value.casefold())
        elif key == "fingerprint":
            if not FINGERPRINT.fullmatch(value):
                raise _fail(self.text, at, f"an error fingerprint is 16 hex digits (0-9, a-f), not {shown(value)}")
            self.lists["fingerprint"].append(value)
        elif key == "age" and value[:1] in (">", "<"):
            if value[0] == ">":
                self.older = _seconds(self.text, at, value[1:])
            else:
                self.newer = _seconds(self.text, at, value[1:])
        elif key == "age":
            raise _fail(self.text, at, "age needs > or <, like age:>1h (older than an hour)")
        else:
            raise _fail(self.text, at, f"unknown key {shown(key)}; keys are {', '.join(KEYS)}")

    def _names(self, key: str, value: str, at: int) -> None:
        parts = [v for v in value.split(",") if v]
        if not parts:
            raise _fail(self.text, at, f"{key}: needs a value")
        bad = [s for s in parts if s not in STATES] if key == "state" else []
        if bad:
            raise _fail(self.text, at, f"unknown state {shown(bad[0])}; states are {', '.join(STATES)}")
        self.lists[key] += parts

    def query(self) -> Query:
        t = self.lists
        return Query(
            tuple(t["queue"]), tuple(t["type"]), tuple(dict.fromkeys(t["state"])), tuple(t["id"]), tuple(t["error"]),
            tuple(t["fingerprint"]), self.older, self.newer, tuple(self.payload), tuple(t["word"]), self.text,
        )  # fmt: skip


def parse(text: str) -> Query:
    """The query ``text`` says, or QuerySyntaxError."""
    if not isinstance(text, str):
        raise QuerySyntaxError("a search is text", op="search")
    if len(text) > MAX_QUERY:
        raise QuerySyntaxError(f"a search is at most {MAX_QUERY} characters long", op="search")
    if text.count('"') % 2:
        raise _fail(text, text.rindex('"'), "a quote is not closed")
    terms = _Terms(text)
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _fail(text, position, "cannot read this")
        key, quoted, bare = match.group(1), match.group(2), match.group(3)
        value = quoted.replace('\\"', '"') if quoted is not None else bare
        terms.add(key, value, match.start(1) if key else match.start(2 if quoted is not None else 3))
        position = match.end()
    return terms.query()


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return _MISSING
    return value


_MISSING = object()


def matches(query: Query, task: TaskInfo, now: float) -> bool:
    """Whether ``task`` (its payload as the searcher may see it: masked where TASKS_REDACT says) matches."""
    if not query.type_matches(task.type):
        return False
    if query.ids and task.id not in query.ids:
        return False
    error = (task.last_error or "").casefold()
    if any(e not in error for e in query.errors):
        return False
    if query.fingerprints and task.error_fingerprint not in query.fingerprints:
        return False
    if not _age_matches(query, task, now):
        return False
    if query.words:
        haystack = task.payload.decode("utf-8", "replace").casefold() + "\n" + error
        if any(w not in haystack for w in query.words):
            return False
    return not query.payload or _payload_matches(query, task.payload)


def _age_matches(query: Query, task: TaskInfo, now: float) -> bool:
    if query.older_than is None and query.newer_than is None:
        return True
    if task.created_at is None:
        return False
    age = now - task.created_at.timestamp()
    return (query.older_than is None or age > query.older_than) and (query.newer_than is None or age < query.newer_than)


def _payload_matches(query: Query, payload: bytes) -> bool:
    try:
        doc = nesting.loads(payload)  # bounded: a stored payload may nest past any walk
    except ValueError:
        return False
    for path, wanted in query.payload:
        value = _at(doc, path)
        if value is _MISSING:
            return False
        if not fnmatch.fnmatchcase(value if isinstance(value, str) else json.dumps(value), wanted):
            return False
    return True
