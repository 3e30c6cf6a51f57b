"""What an API token may touch: a list of queue names ("*" for all) and a list of namespaces (a namespace ``ns``
covers every queue named ``ns:<anything>``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from taskq.queues.engine import ValidationError as EngineValidationError
from taskq.queues.engine import validation as check
from taskq.queues.engine.quoting import shown

MAX_SCOPES = 1000
NAMESPACE_SEPARATOR = ":"


def _names(values: Any, what: str) -> list[str]:
    if not isinstance(values, list) or len(values) > MAX_SCOPES:
        raise ValidationError(f"{what} must be a list of at most {MAX_SCOPES} names")
    out = []
    for value in values:
        if value == "*" and what == "queues":
            out.append(value)
            continue
        try:
            name = check.queue_name(value)
        except EngineValidationError as exc:
            raise ValidationError(f"{what}: {exc.message}") from None
        if what == "namespaces" and NAMESPACE_SEPARATOR in name:
            raise ValidationError(f"namespaces: {shown(name)} may not contain {shown(NAMESPACE_SEPARATOR)}")
        out.append(name)
    return list(dict.fromkeys(out))


def clean_scopes(queues: Any, namespaces: Any) -> tuple[list[str], list[str]]:
    """Validated, de-duplicated scopes; raises Django's ValidationError naming the field."""
    return _names(queues, "queues"), _names(namespaces, "namespaces")


def allows(queues: list[str], namespaces: list[str], queue: str) -> bool:
    if "*" in queues or queue in queues:
        return True
    namespace, sep, rest = queue.partition(NAMESPACE_SEPARATOR)
    return bool(sep and rest) and namespace in namespaces
