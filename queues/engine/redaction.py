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

    @classmethod
    def build(cls, types: Iterable[Any] = (), keys: Iterable[Any] = ()) -> Redaction:
        """Validated rules; raises ``ValidationError`` naming the bad entry."""
        types, keys = list(types), list(keys)
        if len(types) > MAX_RULES or len(keys) > MAX_RULES:
            raise ValidationError(f"at most {MAX_RULES} types and {MAX_RULES} keys", op=_OP)
        checked = tuple(dict.fromkeys(check.task_type(t, _OP) for t in types))
        return cls(checked, frozenset(_key(k) for k in keys))

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
            value = json.loads(data)
        except ValueError:  # UnicodeDecodeError included
            return data
        masked, changed = self._mask_keys(value)
        if not changed:
            return data
        # Compact, as the engine stores JSON payloads, so the unmasked parts read as they were stored.
        return json.dumps(masked, separators=(",", ":"), ensure_ascii=False).encode()

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
