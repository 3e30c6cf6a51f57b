"""Masking of sensitive payloads and results before a person sees them (``TASKS_REDACT``,
``TASKS_REDACT_PATTERNS``).

Three kinds of rule: task types, matched by prefix as handlers are routed (``billing:`` covers ``billing:charge``),
whose whole payload and result are masked; JSON keys, matched case-insensitively at any depth of a JSON payload or
result, whose values are masked; and value patterns (regular expressions, checked by ``redaction_patterns``), each
substring of a string they match masked wherever it is: in the string values of a JSON payload or result (a
number whose JSON text matches is masked whole), in a payload or result that is UTF-8 text but not JSON, and in
any other text a person reads (``mask_string``: headers, error messages, tracebacks, audit entries). Masking works
on the stored bytes and gives bytes back, so every renderer (console, admin, CLI) shows what it would have shown,
minus the secrets. The same rules apply to Python values (``mask_value``, ``mask_value_text``: the RQ bridge's job
arguments, results and tracebacks). Binary data (bytes that are not UTF-8) is masked only whole, by type.

Every walk of a nested value stops at ``MAX_DEPTH`` levels: what lies deeper reads ``TOO_DEEP``, so a value nested
ten thousand deep neither crashes the walk nor the ``repr`` that shows it afterwards.

Workers and API consumers never go through here: they get the real payload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from . import nesting
from . import validation as check
from .errors import ValidationError
from .message import TaskInfo
from .quoting import shown
from .redaction_patterns import compile_patterns, context_free

MASK = "[redacted]"
#: What a whole payload or result of a redacted type reads as: a JSON string, so JSON renderers still render it.
MASKED_WHOLE = json.dumps(MASK).encode()
MAX_KEY = 256
MAX_RULES = 1000
#: Levels of dicts, lists, tuples and sets a walk goes into; a container deeper than this reads ``TOO_DEEP``. The
#: same bound as stored JSON is parsed to (``nesting``), so a parsed payload is never cut by it.
MAX_DEPTH = nesting.DEPTH_CEILING
TOO_DEEP = "[too deeply nested to display]"
#: The containers a walk goes into (a set may hold tuples, nested without bound).
_CONTAINERS = (dict, list, tuple, set, frozenset)

_OP = "redaction"


@dataclass(frozen=True)
class Redaction:
    """The rules. Empty rules mask nothing (and cost nothing: ``apply`` returns its input)."""

    types: tuple[str, ...] = ()
    keys: frozenset[str] = frozenset()  # casefolded
    #: JSON nested deeper than this is not parsed (``nesting``): with key rules or patterns, it is masked whole,
    #: since what it holds cannot be known without walking it.
    max_depth: int = nesting.DEPTH_CEILING
    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def build(
        cls,
        types: Iterable[Any] = (),
        keys: Iterable[Any] = (),
        max_depth: int = nesting.DEPTH_CEILING,
        patterns: Any = (),
    ) -> Redaction:
        """Validated rules; raises ``ValidationError`` naming the bad entry (``redaction_patterns`` says which
        patterns are refused)."""
        types, keys = list(types), list(keys)
        if len(types) > MAX_RULES or len(keys) > MAX_RULES:
            raise ValidationError(f"at most {MAX_RULES} types and {MAX_RULES} keys", op=_OP)
        checked = tuple(dict.fromkeys(check.task_type(t, _OP) for t in types))
        depth = check.count(max_depth, "max_depth", 1, nesting.DEPTH_CEILING, _OP)
        return cls(checked, frozenset(_key(k) for k in keys), depth, compile_patterns(patterns))

    def __bool__(self) -> bool:
        return bool(self.types or self.keys or self.patterns)

    def covers_type(self, task_type: str) -> bool:
        """Whether the type's whole payload and result are masked."""
        return any(task_type.startswith(prefix) for prefix in self.types)

    def apply(self, task_type: str, data: bytes | None) -> bytes | None:
        """``data`` as a person may see it: the whole of it masked for a redacted type; in JSON, the values of
        redacted keys and what the patterns match in its strings and numbers masked; in UTF-8 text that is not
        JSON, what the patterns match; else unchanged (the same object). Binary data of other types is
        unchanged: keys only exist in JSON, and patterns match text."""
        if not data:
            return data
        if self.covers_type(task_type):
            return MASKED_WHOLE
        if not (self.keys or self.patterns):
            return data
        rules = self if not self.patterns or self._may_match(data) else self._keys_only
        if not rules.keys and not rules.patterns:
            return data
        try:
            value = nesting.loads(data, self.max_depth)
        except nesting.TooDeepError:
            return MASKED_WHOLE
        except ValueError:  # UnicodeDecodeError included
            return rules._mask_raw_text(data)
        masked, changed = rules._mask_keys(value, 0)
        if not changed:
            return data
        # Compact, as the engine stores JSON payloads, so the unmasked parts read as they were stored.
        return json.dumps(masked, separators=(",", ":"), ensure_ascii=False).encode()

    @cached_property
    def _keys_only(self) -> Redaction:
        return Redaction(self.types, self.keys, self.max_depth)

    @cached_property
    def _prefilters(self) -> bool:
        """Whether a search of the raw text may stand for the walk (``_may_match``): only when no pattern looks at
        what lies around a match (anchors, lookarounds), which differs between a string and the JSON holding it."""
        return all(context_free(pattern) for pattern in self.patterns)

    def _may_match(self, data: bytes) -> bool:
        """False when no pattern can match inside any string or number of ``data``, told without parsing it: a
        match inside a JSON string is a match in the raw text too, when the text has no escapes (so each string
        reads as written) and the patterns look at nothing around a match. Most payloads match no pattern, and
        this search costs a few microseconds where the walk costs a parse and a call per value and pattern."""
        if not self._prefilters:
            return True
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return True
        return "\\" in text or any(pattern.search(text) for pattern in self.patterns)

    def _mask_raw_text(self, data: bytes) -> bytes:
        """A payload or result that is not JSON: what the patterns match, when it is UTF-8 text."""
        if not self.patterns:
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        masked = self.mask_string(text)
        return data if masked is text else masked.encode()

    def mask_string(self, text: str) -> str:
        """``text`` with every substring a pattern matches masked; the same object when none matches (so
        ``shown is text`` says nothing was)."""
        if not text:
            return text
        masked = text
        for pattern in self.patterns:
            masked = pattern.sub(MASK, masked)
        return text if masked == text else masked

    def mask_json_text(self, text: str) -> str:
        """``text`` (an audit entry's detail, say: often JSON that quotes payloads and headers) with what the
        patterns match masked: in each string of it when it is JSON, so it stays JSON, else in the text."""
        if not self.patterns or not text:
            return text
        try:
            value = nesting.loads(text.encode(), self.max_depth)
        except ValueError:  # not JSON, or nested too deep to walk: the text itself
            return self.mask_string(text)
        masked, changed = Redaction(patterns=self.patterns)._mask_keys(value, 0)
        return json.dumps(masked, ensure_ascii=False) if changed else text

    def searchable(self, task: TaskInfo) -> TaskInfo:
        """``task`` as a search may read it: its payload masked by every rule and its last error by the patterns,
        so a search never finds what a person could not see (``search.matches`` reads both)."""
        payload = self.apply(task.type, task.payload) or b""
        error = self.mask_string(task.last_error) if task.last_error else task.last_error
        if payload is task.payload and error is task.last_error:
            return task
        return replace(task, payload=payload, last_error=error)

    def mask_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Headers as a person may see them: their values as ``mask_string`` shows them (names are kept)."""
        return {name: self.mask_string(value) for name, value in headers.items()}

    def mask_text(self, task_type: str, payload: bytes, text: str) -> str:
        """``text`` (an error message a handler wrote, perhaps quoting its payload) as a person may see it: all of
        it masked for a redacted type; else every value of a redacted key of the JSON ``payload`` masked wherever
        it appears, as written, as ``repr`` writes it and as JSON escapes it, and what the patterns match."""
        value = None  # no payload (or one not read, as nothing depends on it): no secret to find
        if text and self.keys and payload and not self.covers_type(task_type):
            try:
                value = nesting.loads(payload, self.max_depth)
            except nesting.TooDeepError:
                return MASK
            except ValueError:
                return text
        return self.mask_value_text(task_type, value, text)

    def mask_value(self, task_type: str, value: Any) -> Any:
        """A Python value (an RQ job's arguments, keyword arguments, result or meta) as a person may see it:
        ``MASK`` whole for a redacted type; else a copy with the value of every redacted key (a string key of a
        dict, casefolded) masked at any depth of dicts, lists, tuples and sets, and the strings and numbers the
        patterns match masked as in JSON. Other objects are kept as they are. Containers deeper than
        ``MAX_DEPTH`` read ``TOO_DEEP``, with rules or without, so the copy's ``repr`` is always safe to take."""
        if self.covers_type(task_type):
            return MASK
        return self._mask_keys(value, 0)[0]

    def mask_value_text(self, task_type: str, value: Any, text: str) -> str:
        """``mask_text`` for a Python ``value`` (an RQ job's arguments, say) instead of a JSON payload: ``text``
        (a traceback, a description) with every value of a redacted key of ``value`` masked."""
        if not text:
            return text
        if self.covers_type(task_type):
            return MASK
        if self.keys:
            text = self._without_secrets(value, text)
        return self.mask_string(text)

    def _without_secrets(self, value: Any, text: str) -> str:
        secrets: set[str] = set()
        self._secrets(value, False, secrets, 0)
        for secret in sorted(secrets, key=len, reverse=True):  # longest first: a value may hold a shorter one
            text = text.replace(secret, MASK)
        return text

    def _secrets(self, value: Any, under_key: bool, out: set[str], depth: int) -> bool:
        """Adds the text forms of every value under a redacted key to ``out`` (each leaf, and containers whole
        when they lie within ``MAX_DEPTH``: a deeper one has no ``repr`` to appear in a message). Returns
        whether ``value`` lies within ``MAX_DEPTH``."""
        if not isinstance(value, _CONTAINERS):
            if under_key and value is not None and not isinstance(value, bool):
                out.update(_forms(value))
            return True
        if depth >= MAX_DEPTH:
            return False
        pairs = value.items() if isinstance(value, dict) else ((None, item) for item in value)
        complete = True
        for key, item in pairs:
            complete = self._secrets(item, under_key or self._redacts(key), out, depth + 1) and complete
        if under_key and complete:
            out.update(_forms(value))
        return complete

    def hides(self, task_type: str, data: bytes | None) -> bool:
        """Whether ``apply`` would mask anything in ``data``."""
        return self.apply(task_type, data) is not data

    def _redacts(self, key: Any) -> bool:
        return isinstance(key, str) and key.casefold() in self.keys

    def _mask_keys(self, value: Any, depth: int) -> tuple[Any, bool]:
        """``value`` with the values of redacted keys, and what the patterns match, masked, and whether anything
        was (a container cut at ``MAX_DEPTH`` counts: it is not shown either)."""
        if not isinstance(value, _CONTAINERS):
            return self._mask_leaf(value)
        if depth >= MAX_DEPTH:
            return TOO_DEEP, True
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            changed = False
            for key, item in value.items():
                if self._redacts(key):
                    out[key], changed = MASK, True
                else:
                    out[key], inner = self._mask_keys(item, depth + 1)
                    changed = changed or inner
            return out, changed
        items = [self._mask_keys(item, depth + 1) for item in value]
        masked = [item for item, _ in items]
        return _same_kind(value, masked), any(inner for _, inner in items)

    def _mask_leaf(self, value: Any) -> tuple[Any, bool]:
        """A string with what the patterns match masked; a number (not a boolean) masked whole when its JSON
        text holds a match (a card number written as a number); anything else kept."""
        if not self.patterns:
            return value, False
        if isinstance(value, str):
            masked = self.mask_string(value)
            return masked, masked is not value
        if isinstance(value, int | float) and not isinstance(value, bool):
            written = str(value) if isinstance(value, int) else json.dumps(value)  # an int's JSON text is str()
            if any(pattern.search(written) for pattern in self.patterns):
                return MASK, True
        return value, False


def _same_kind(value: Any, items: list[Any]) -> Any:
    """``items`` as the kind of container ``value`` is (a subclass, such as a namedtuple, as its base)."""
    if isinstance(value, list):
        return items
    if isinstance(value, frozenset):
        return frozenset(items)
    if isinstance(value, set):
        return set(items)
    return tuple(items)


def _forms(value: Any) -> set[str]:
    """How ``value`` may read inside a message: as str() and repr() write it, and as JSON does (strings also
    without their quotes, since a message may quote them its own way), and each of these escaped once more."""
    forms = {str(value), repr(value)}
    try:
        forms |= {json.dumps(value), json.dumps(value, ensure_ascii=False)}
    except (TypeError, ValueError):  # a Python value JSON cannot write (a set, an object, a tuple key)
        pass
    if isinstance(value, str):
        forms |= {repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    # Once more escaped, as a message quoting a message reads (str(KeyError(text)) is repr(text)).
    forms |= {escaped for form in forms for escaped in (repr(form)[1:-1], json.dumps(form)[1:-1])}
    return {form for form in forms if form}


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"a redacted key must be a non-empty string, got {shown(value)}", op=_OP)
    if len(value) > MAX_KEY or value != value.strip() or any(not ch.isprintable() for ch in value):
        raise ValidationError(
            f"a redacted key is 1 to {MAX_KEY} printable characters with no surrounding "
            f"spaces, got {value[:MAX_KEY]!r}",
            op=_OP,
        )
    return value.casefold()


NO_REDACTION = Redaction()
