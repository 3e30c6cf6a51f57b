"""Masking of sensitive payloads and results before a person sees them (``TASKS_REDACT``).

Two kinds of rule: task types, matched by prefix as handlers are routed (``billing:`` covers ``billing:charge``),
whose whole payload and result are masked; and JSON keys, matched case-insensitively at any depth of a JSON
payload or result, whose values are masked. Masking works on the stored bytes and gives bytes back, so every
renderer (console, admin, CLI) shows what it would have shown, minus the secrets.

Workers and API consumers never go through here: they get the real payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import nesting
from . import validation as check
from .errors import ValidationError

MASK = "[redacted]"
#: What a whole payload or result of a redacted type reads as: a JSON string, so JSON renderers still render it.
MASKED_WHOLE = json.dumps(MASK).encode()
MAX_KEY = 256
MAX_RULES = 1000

_OP = "redaction"


@dataclass(frozen=True)
class Redaction:
    """The rules. Empty rules mask nothing (and cost nothing: ``apply`` returns its input)."""

    types: tuple[str, ...] = ()
    keys: frozenset[str] = frozenset()  # casefolded
    #: JSON nested deeper than this is not parsed (``nesting``): with key rules, it is masked whole, since what
    #: it holds under a redacted key cannot be known without walking it.
    max_depth: int = nesting.DEPTH_CEILING

    @classmethod
    def build(
        cls, types: Iterable[Any] = (), keys: Iterable[Any] = (), max_depth: int = nesting.DEPTH_CEILING
    ) -> Redaction:
        """Validated rules; raises ``ValidationError`` naming the bad entry."""
        types, keys = list(types), list(keys)
        if len(types) > MAX_RULES or len(keys) > MAX_RULES:
            raise ValidationError(f"at most {MAX_RULES} types and {MAX_RULES} keys", op=_OP)
        checked = tuple(dict.fromkeys(check.task_type(t, _OP) for t in types))
        depth = check.count(max_depth, "max_depth", 1, nesting.DEPTH_CEILING, _OP)
        return cls(checked, frozenset(_key(k) for k in keys), depth)

    def __bool__(self) -> bool:
        return bool(self.types or self.keys)

    def covers_type(self, task_type: str) -> bool:
        """Whether the type's whole payload and result are masked."""
        return any(task_type.startswith(prefix) for prefix in self.types)

    def apply(self, task_type: str, data: bytes | None) -> bytes | None:
        """``data`` as a person may see it: the whole of it masked for a redacted type, the values of redacted
        keys masked in JSON, else unchanged (the same object). Non-JSON data of other types is unchanged: keys
        only exist in JSON."""
        if not data:
            return data
        if self.covers_type(task_type):
            return MASKED_WHOLE
        if not self.keys:
            return data
        try:
            value = nesting.loads(data, self.max_depth)
        except nesting.TooDeepError:
            return MASKED_WHOLE
        except ValueError:  # UnicodeDecodeError included
            return data
        masked, changed = self._mask_keys(value)
        if not changed:
            return data
        # Compact, as the engine stores JSON payloads, so the unmasked parts read as they were stored.
        return json.dumps(masked, separators=(",", ":"), ensure_ascii=False).encode()

    def mask_text(self, task_type: str, payload: bytes, text: str) -> str:
        """``text`` (an error message a handler wrote, perhaps quoting its payload) as a person may see it: all of
        it masked for a redacted type; else every value of a redacted key of the JSON ``payload`` masked wherever
        it appears, as written, as ``repr`` writes it and as JSON escapes it."""
        if not text:
            return text
        if self.covers_type(task_type):
            return MASK
        if not self.keys or not payload:
            return text
        try:
            value = nesting.loads(payload, self.max_depth)
        except nesting.TooDeepError:
            return MASK
        except ValueError:
            return text
        secrets: set[str] = set()
        self._secrets(value, False, secrets)
        for secret in sorted(secrets, key=len, reverse=True):  # longest first: a value may hold a shorter one
            text = text.replace(secret, MASK)
        return text

    def _secrets(self, value: Any, under_key: bool, out: set[str]) -> None:
        """The text forms of every value under a redacted key (containers whole, and each leaf)."""
        if isinstance(value, dict):
            if under_key:
                out.update(_forms(value))
            for key, item in value.items():
                self._secrets(item, under_key or key.casefold() in self.keys, out)
        elif isinstance(value, list):
            if under_key:
                out.update(_forms(value))
            for item in value:
                self._secrets(item, under_key, out)
        elif under_key and value is not None and not isinstance(value, bool):
            out.update(_forms(value))

    def hides(self, task_type: str, data: bytes | None) -> bool:
        """Whether ``apply`` would mask anything in ``data``."""
        return self.apply(task_type, data) is not data

    def _mask_keys(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            changed = False
            for key, item in value.items():
                if key.casefold() in self.keys:
                    out[key], changed = MASK, True
                else:
                    out[key], inner = self._mask_keys(item)
                    changed = changed or inner
            return out, changed
        if isinstance(value, list):
            items = [self._mask_keys(item) for item in value]
            return [item for item, _ in items], any(inner for _, inner in items)
        return value, False


def _forms(value: Any) -> set[str]:
    """How ``value`` may read inside a message: as str() and repr() write it, and as JSON does (strings also
    without their quotes, since a message may quote them its own way), and each of these escaped once more."""
    forms = {str(value), repr(value), json.dumps(value), json.dumps(value, ensure_ascii=False)}
    if isinstance(value, str):
        forms |= {repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    # Once more escaped, as a message quoting a message reads (str(KeyError(text)) is repr(text)).
    forms |= {escaped for form in forms for escaped in (repr(form)[1:-1], json.dumps(form)[1:-1])}
    return {form for form in forms if form}


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"a redacted key must be a non-empty string, got {value!r}", op=_OP)
    if len(value) > MAX_KEY or value != value.strip() or any(not ch.isprintable() for ch in value):
        raise ValidationError(
            f"a redacted key is 1 to {MAX_KEY} printable characters with no surrounding "
            f"spaces, got {value[:MAX_KEY]!r}",
            op=_OP,
        )
    return value.casefold()


NO_REDACTION = Redaction()
