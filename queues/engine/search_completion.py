"""Completion of the search language as it is typed (the console's query box): at a cursor in a search,
what is being typed there (a key, or a value of one) and what may come there.

- a key: the parser's own keys (``search.KEY_HELP``, so the two cannot drift), and after ``payload.`` the payload
  paths seen in a sample of the tasks the rest of the search reads (``payload.customer.id:``);
- a value of ``queue:``, ``type:`` or ``state:``: the queue names, the task types those queues have seen, the
  states. Payload values are never offered: the paths are keys, and what a masked key holds must stay unsaid.

An option says what replaces the term under the cursor, whole: ``queue:mail,lo`` with ``low`` chosen becomes
``queue:mail,low``; a name with a space quotes the value (``queue:"mail,bulk mail"``), as the parser reads it.
Names the language cannot write (with a comma, a quote or a backslash) are not offered.

Where the values come from is the caller's (``Sources``); ``InspectorSources`` reads them from Redis, bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from . import nesting
from .errors import ValidationError
from .inspector import Inspector
from .keys import STATES
from .redaction import Redaction
from .search import KEY_HELP, LIST_KEYS, MAX_QUERY, Query, QuerySyntaxError, parse

MAX_OPTIONS = 20
#: Payload paths collected at most, and how deep into a payload (a path deeper than this is not offered).
MAX_PATHS = 200
PATH_DEPTH = 6
#: Queues whose task types are read for ``type:`` (one hash each, in one round trip).
MAX_TYPE_QUEUES = 100
PAYLOAD = "payload."
_KEY = re.compile(r"[A-Za-z_][\w.]*")
_STEP = re.compile(r"\w+")  # a step of a payload path the parser reads (it splits the key at dots)
_UNWRITABLE = re.compile(r'[,"\\]')
_OP = "search.complete"


class Sources(Protocol):
    """Where the values offered come from; each read is asked for only when its kind is being completed."""

    def queues(self) -> list[str]: ...

    def types(self, query: Query) -> list[str]: ...

    def payload_paths(self, query: Query) -> list[str]: ...


@dataclass(frozen=True)
class Option:
    """One completion: ``text`` replaces the span of the Completion; ``label`` and ``detail`` are what a list
    shows (``detail`` says what kind of thing it is)."""

    text: str
    label: str
    detail: str


@dataclass(frozen=True)
class Completion:
    """What may replace ``text[start:end]`` of the search (the term under the cursor), best first."""

    start: int
    end: int
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class Spot:
    """The term under the cursor: ``key`` is None while a key is typed, else the key whose value is typed;
    ``prefix`` what is typed of the part completed (up to the cursor); ``before`` and ``after`` the other values
    of a list (``queue:mail,lo|,x``); ``text[start:end]`` the term; ``rest`` the search without it."""

    key: str | None
    prefix: str
    start: int
    end: int
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    rest: str = ""


def spot(text: str, cursor: int) -> Spot | None:
    """The term the cursor is in, or None where nothing completes (a bare word, a quoted phrase).

    Raises:
        ValidationError: the search is too long, or the cursor not inside it.
    """
    if not isinstance(text, str) or len(text) > MAX_QUERY:
        raise ValidationError(f"a search is text of at most {MAX_QUERY} characters", op=_OP)
    if isinstance(cursor, bool) or not isinstance(cursor, int) or not 0 <= cursor <= len(text):
        raise ValidationError(f"the cursor is a position in the search, 0 to {len(text)}", op=_OP)
    start, end = _term(text, cursor)
    typed, term = text[start:cursor], text[start:end]
    rest = (text[:start] + " " + text[end:]).strip()
    key = _KEY.match(term)
    if key and term[key.end() : key.end() + 1] == ":" and cursor > start + key.end():
        return _value_spot(
            key.group(), text[start + key.end() + 1 : end], cursor - start - key.end() - 1, start, end, rest
        )
    if not _KEY.fullmatch(typed) and typed:
        return None
    if key and term[key.end() : key.end() + 1] == ":":
        end = start + key.end() + 1  # in the key of a term with its value: the key alone is replaced
    elif not typed:
        end = cursor  # before a word: a key goes in front of it, the word stays
    return Spot(None, typed, start, end, rest=rest)


def _term(text: str, cursor: int) -> tuple[int, int]:
    """Where the term under the cursor starts and ends: at whitespace outside quotes."""
    start, quoted, at = 0, False, 0
    while at < cursor:
        char = text[at]
        if char == "\\" and quoted:
            at += 1
        elif char == '"':
            quoted = not quoted
        elif char.isspace() and not quoted:
            start = at + 1
        at += 1
    end = min(at, len(text))
    while end < len(text) and (quoted or not text[end].isspace()):
        if text[end] == "\\" and quoted:
            end += 1
        elif text[end] == '"':
            quoted = not quoted
        end += 1
    return start, min(end, len(text))


def _value_spot(key: str, value: str, cursor: int, start: int, end: int, rest: str) -> Spot:
    """The Spot of ``key:value`` with the cursor at ``cursor`` of ``value`` (quoted or not)."""
    quoted = value.startswith('"')
    inner = value[1:] if quoted else value
    cursor = max(0, cursor - 1) if quoted else cursor
    if quoted and inner.endswith('"') and not inner.endswith('\\"'):
        inner = inner[:-1]
    inner = inner.replace('\\"', '"')
    if key not in LIST_KEYS:
        return Spot(key, inner[:cursor], start, end, rest=rest)
    parts = inner.split(",")
    index = inner[:cursor].count(",")
    prefix = inner[:cursor].rsplit(",", 1)[-1]
    return Spot(key, prefix, start, end, tuple(parts[:index]), tuple(p for p in parts[index + 1 :] if p), rest)


def complete(text: str, cursor: int, sources: Sources) -> Completion:
    """What may replace the term at ``cursor`` of ``text``, best first (at most ``MAX_OPTIONS``).

    Raises:
        ValidationError: the search is too long, or the cursor not inside it.
    """
    where = spot(text, cursor)
    if where is None:
        return Completion(cursor, cursor)
    options = _key_options(where, sources) if where.key is None else _value_options(where, sources, text)
    return Completion(where.start, where.end, tuple(options[:MAX_OPTIONS]))


def _narrowing(rest: str) -> Query:
    """What the other terms say (which queues, states, types), or nothing when they cannot be read yet."""
    try:
        return parse(rest)
    except QuerySyntaxError:
        return Query()


def _key_options(where: Spot, sources: Sources) -> list[Option]:
    if where.prefix.casefold().startswith(PAYLOAD):
        paths = [PAYLOAD + p for p in sources.payload_paths(_narrowing(where.rest))]
        return [Option(p + ":", p + ":", "payload path") for p in _ranked(paths, where.prefix)]
    typed = {
        key.removesuffix("<path>"): help_ for key, help_ in KEY_HELP.items()
    }  # "payload.<path>" is typed "payload."
    return [
        Option(key, key + "<path>:", typed[key]) if key == PAYLOAD else Option(key + ":", key + ":", typed[key])
        for key in _ranked(typed, where.prefix)
    ]


_KINDS = {"queue": "queue", "type": "task type", "state": "state"}


def _value_options(where: Spot, sources: Sources, text: str) -> list[Option]:
    key = where.key or ""
    if key == "queue":
        names = sources.queues()
    elif key == "type":
        names = sources.types(_narrowing(where.rest))
    elif key == "state":
        names = list(STATES)
    else:
        return []
    taken = {*where.before, *where.after}
    at_end = where.end == len(text) and not where.after
    names = [n for n in names if n and n not in taken and not _UNWRITABLE.search(n)]
    return [
        Option(f"{key}:{_written([*where.before, name, *where.after])}" + (" " if at_end else ""), name, _KINDS[key])
        for name in _ranked(names, where.prefix)
    ]


def _written(values: list[str]) -> str:
    """A list value as the parser reads it: quoted when a name holds whitespace."""
    joined = ",".join(values)
    return f'"{joined}"' if any(c.isspace() for c in joined) else joined


def _ranked(candidates: Iterable[str], prefix: str) -> list[str]:
    """Those starting with ``prefix`` (any case), then those holding it elsewhere; each in the given order."""
    wanted = prefix.casefold()
    unique = list(dict.fromkeys(candidates))
    first = [c for c in unique if c.casefold().startswith(wanted)]
    inside = [c for c in unique if wanted and wanted in c.casefold() and not c.casefold().startswith(wanted)]
    return first + inside


def payload_paths(payloads: Iterable[bytes], most: int = MAX_PATHS) -> list[str]:
    """The paths (``customer.id``, ``items.0.sku``) in the JSON objects of ``payloads``, sorted, at most ``most``
    and ``PATH_DEPTH`` steps deep; of a list, its first item's (the parser reads a list by position). Keys the
    language cannot write (a step that is not letters, digits and underscores) are left out, and so is all that
    lies below them. Payloads that are not JSON are skipped."""
    found: dict[str, None] = {}
    for payload in payloads:
        try:
            doc = nesting.loads(payload)
        except ValueError:
            continue
        todo: list[tuple[tuple[str, ...], Any]] = [((), doc)]
        while todo and len(found) < most:
            path, value = todo.pop()
            if path:
                found[".".join(path)] = None
            if len(path) >= PATH_DEPTH:
                continue
            if isinstance(value, dict):
                todo += [((*path, k), v) for k, v in value.items() if isinstance(k, str) and _STEP.fullmatch(k)]
            elif isinstance(value, list) and value:
                todo.append(((*path, "0"), value[0]))
        if len(found) >= most:
            break
    return sorted(found)


@dataclass(frozen=True)
class InspectorSources:
    """The values from Redis through an Inspector, each read bounded: the queue set; the task types of at most
    ``MAX_TYPE_QUEUES`` of the queues the search reads (one hash each, one round trip); the payload paths of a
    sample of the tasks it reads (``Inspector.payload_sample``), as ``redaction`` masks them: below a masked key
    there is nothing to see, so no path."""

    inspector: Inspector
    redaction: Redaction | None = None

    def queues(self) -> list[str]:
        return list(self.inspector.queues())

    def types(self, query: Query) -> list[str]:
        queues = [q for q in self.queues() if query.queue_matches(q)][:MAX_TYPE_QUEUES]
        counts = self.inspector.type_counts_of(queues, keep_zero=True)
        return sorted({t for per_type in counts.values() for t in per_type if t})

    def payload_paths(self, query: Query) -> list[str]:
        return payload_paths(self.inspector.payload_sample(query, redaction=self.redaction))
