"""The redaction rules as the settings give them (``TASKS_REDACT``, ``TASKS_REDACT_PATTERNS``), built once per
settings, and the masking of audit entries by them. Apart from ``redaction_access`` so that the audit log, which
``redaction_access`` writes to, can mask with them too.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .conf import taskq_settings
from .engine import ValidationError
from .engine.redaction import Redaction
from .engine.redaction_patterns import compile_patterns


def rules() -> Redaction:
    """The configured rules. Bad ones raise ImproperlyConfigured naming what is wrong: the system check
    ``taskq.E110`` reports it at start-up, and every place that masks fails rather than show anything unmasked."""
    taskq = taskq_settings()
    given = (taskq.redact_types, taskq.redact_keys, taskq.max_payload_depth, taskq.redact_patterns)
    try:
        return _cached(*given)
    except TypeError:  # unhashable patterns (a list inside the list, say): refused by _build, uncached
        return _build(*given)


@lru_cache(maxsize=16)
def _cached(types: tuple[str, ...], keys: tuple[str, ...], max_depth: int, patterns: Any) -> Redaction:
    return _build(types, keys, max_depth, patterns)


def _build(types: tuple[str, ...], keys: tuple[str, ...], max_depth: int, patterns: Any) -> Redaction:
    try:
        named = Redaction.build(types, keys, max_depth)
    except ValidationError as exc:
        raise ImproperlyConfigured(f"TASKS_REDACT (TASKS_REDACT_TYPES / TASKS_REDACT_KEYS): {exc.message}") from None
    try:
        return replace(named, patterns=compile_patterns(patterns))
    except ValidationError as exc:  # its message names TASKS_REDACT_PATTERNS and the entry
        raise ImproperlyConfigured(exc.message) from None


def mask_detail(text: str) -> str:
    """An audit entry's detail as everyone who reads the log may see it: what the patterns match masked, in its
    strings when it is JSON (so it stays JSON)."""
    return rules().mask_json_text(text)
