"""How messages show a value: as JSON text, with what cannot be seen escaped. The lowest module of the engine's
messages, so that every module may quote a value the same way (settings and errors included, which the validation
rules themselves import)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

# C0 and C1 control characters and DEL; a compiled class is several times faster than a per-character loop,
# and every enqueue validates its queue and type names.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
#: Unicode categories a name may not hold: controls, format characters (zero-width space, bidi marks, BOM...),
#: surrogates and the line and paragraph separators. None of them draws anything a person could read or click.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Letters that draw nothing (the Hangul fillers), refused in names as the invisible characters above are.
FILLERS = frozenset("\u115f\u1160\u3164\uffa0")
_SHOWN_LIMIT = 60


def shown(value: Any) -> str:
    """``value`` as messages show it: JSON text (``"name"``, ``true``, ``null``), with control, invisible and
    surrogate characters escaped (``"\\u200b"``), cut at 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # keys JSON cannot hold, numbers past int's string limit
        text = json.dumps(f"{type(value).__name__} value")
    if not text.isascii() or CONTROL.search(text):
        text = "".join(f"\\u{ord(c):04x}" if is_hidden(c) else c for c in text)
    return text if len(text) <= _SHOWN_LIMIT else text[: _SHOWN_LIMIT - 1] + "\u2026"


def is_hidden(char: str) -> bool:
    """Whether ``char`` draws nothing a person could read: a control, format or surrogate character, or a filler."""
    return unicodedata.category(char) in HIDDEN_CATEGORIES or char in FILLERS
