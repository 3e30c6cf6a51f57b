"""The value patterns of ``TASKS_REDACT_PATTERNS``, checked before anything is masked with them.

A pattern is a Python regular expression. Every substring of a text it matches is masked, so a pattern is refused
when it is not a string, does not compile, is longer than ``MAX_PATTERN`` characters or there are more than
``MAX_PATTERNS`` of them, and also when:

- it can match the empty string (``a*``, ``x?``, ``\\b``, ``^``): it would mask between every character, or
  nothing at all, depending on where the engine tries it;
- it nests one unbounded repetition inside another (``(a+)+``, ``(\\w*)*``, ``(?:\\s*\\w+)+``): on a string
  that almost matches, the backtracking engine tries every way to split it, which is exponential in its length
  (the classic catastrophic pattern). A possessive quantifier (``a++``) or an atomic group (``(?>...)``) does not
  backtrack, so one of those inside a repetition is accepted.

What is not refused: alternatives that overlap under a repetition (``(a|ab)*``), backreferences, and patterns
that backtrack in polynomial time (``.*a.*b`` against a long string with no ``b``). The docs say so
(docs/settings.md, docs/console.md "Redaction").

The structure is read with the standard library's own pattern parser (``re._parser``), the parser ``re.compile``
itself uses. It is not public API: where a Python does not have it, the two structural checks are skipped and the
others still apply.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

from .errors import ValidationError

SETTING = "TASKS_REDACT_PATTERNS"
MAX_PATTERNS = 100
MAX_PATTERN = 1000  # characters
_OP = "redaction"

try:
    _PARSER: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Pythons before 3.11 call it sre_parse; the structural checks are skipped
    _PARSER = None


def compile_patterns(patterns: Any) -> tuple[re.Pattern[str], ...]:
    """``patterns`` compiled; raises ``ValidationError`` naming the setting and the first bad entry."""
    if not isinstance(patterns, list | tuple):  # a string or a dict is iterable too, but no list of patterns
        raise ValidationError(
            f"{SETTING} must be a list of regular expressions (strings), got {type(patterns).__name__} "
            f"{_shown(patterns)}",
            op=_OP,
        )
    items = list(patterns)
    if len(items) > MAX_PATTERNS:
        raise ValidationError(f"{SETTING} holds {len(items)} patterns; at most {MAX_PATTERNS}", op=_OP)
    return tuple(dict.fromkeys(_compiled(index, item) for index, item in enumerate(items)))


def _compiled(index: int, pattern: Any) -> re.Pattern[str]:
    where = f"{SETTING}[{index}]"
    if not isinstance(pattern, str):
        raise ValidationError(
            f"{where} must be a regular expression (a string), got {type(pattern).__name__} {_shown(pattern)}",
            op=_OP,
        )
    if not pattern or len(pattern) > MAX_PATTERN:
        raise ValidationError(f"{where} must be 1 to {MAX_PATTERN} characters long, got {len(pattern)}", op=_OP)
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValidationError(f"{where} {_shown(pattern)} is not a valid regular expression: {exc}", op=_OP) from None
    except (OverflowError, RecursionError):  # a repeat count past the engine's limit, parentheses nested too deep
        raise ValidationError(f"{where} {_shown(pattern)} is too large to compile", op=_OP) from None
    if _PARSER is not None:
        _refuse_risky(where, pattern)
    return compiled


def _refuse_risky(where: str, pattern: str) -> None:
    parsed = _PARSER.parse(pattern)
    if parsed.getwidth()[0] == 0:
        raise ValidationError(
            f"{where} {_shown(pattern)} can match the empty string, so it would mask between characters: make "
            "it match at least one character (a+ rather than a*)",
            op=_OP,
        )
    if _nested_unbounded(parsed, inside=False):
        raise ValidationError(
            f"{where} {_shown(pattern)} nests an unbounded repetition inside another (as in (a+)+), which can take "
            "exponential time on a string that almost matches: write it without the nesting, or make the inner "
            "repetition possessive (a++) or atomic ((?>a+))",
            op=_OP,
        )


def _nested_unbounded(parsed: Any, inside: bool) -> bool:
    """Whether the parsed pattern holds a backtracking repetition without an upper bound inside another one
    (``inside``: the walk is already within one)."""
    backtracking = (_PARSER.MAX_REPEAT, _PARSER.MIN_REPEAT)
    for op, arg in parsed:
        if op in backtracking:
            low, high, body = arg
            unbounded = high == _PARSER.MAXREPEAT
            if unbounded and inside:
                return True
            if _nested_unbounded(body, inside or unbounded):
                return True
            continue
        # An atomic group or a possessive repetition never gives back what it matched: what lies within it cannot
        # be split again by an outer repetition.
        fresh = op in (getattr(_PARSER, "ATOMIC_GROUP", None), getattr(_PARSER, "POSSESSIVE_REPEAT", None))
        if any(_nested_unbounded(child, inside and not fresh) for child in _subpatterns(arg)):
            return True
    return False


def context_free(pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` matches a JSON string's text the same inside the JSON as alone: no anchor (``^``, ``$``,
    ``\\A``...) and no lookaround. Word boundaries (``\\b``, ``\\B``) are kept: what surrounds a string or a number
    in JSON (quotes, commas, brackets, blanks) is no word character, as nothing at the ends of a text is. False
    where the parser is not at hand."""
    if _PARSER is None:
        return False
    return _looks_at_nothing_around(_PARSER.parse(pattern.pattern, pattern.flags))


def _looks_at_nothing_around(parsed: Any) -> bool:
    for op, arg in parsed:
        if op in (_PARSER.ASSERT, _PARSER.ASSERT_NOT):
            return False
        if op == _PARSER.AT and arg not in (_PARSER.AT_BOUNDARY, _PARSER.AT_NON_BOUNDARY):
            return False
        if not all(_looks_at_nothing_around(child) for child in _subpatterns(arg)):
            return False
    return True


def _subpatterns(arg: Any) -> Iterator[Any]:
    """The parsed subpatterns inside an operation's argument (groups, branches, lookarounds, conditionals)."""
    if isinstance(arg, _PARSER.SubPattern):
        yield arg
    elif isinstance(arg, tuple | list):
        for item in arg:
            yield from _subpatterns(item)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
