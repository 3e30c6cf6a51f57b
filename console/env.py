"""Typed readers for the environment variables of Django's own settings, used by settings.py (taskq's own are
listed in ``queues.engine.settings``, which parses both).

Unset and empty variables both mean "use the default", so a compose file can write ``FOO: ""`` to fall back.
A value that is set but cannot be parsed raises ImproperlyConfigured naming the variable, so a typo fails at
startup instead of silently running with a default.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, overload

from django.core.exceptions import ImproperlyConfigured

from queues.engine.errors import ValidationError
from queues.engine.settings import parse_value


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _typed(name: str, kind: str, default: Any) -> Any:
    value = _raw(name)
    if value is None:
        return default
    try:
        return parse_value(name, kind, value)
    except ValidationError as exc:
        raise ImproperlyConfigured(exc.message) from None


def env_str(name: str, default: str) -> str:
    """Return the variable as a string, or ``default`` when unset or empty."""
    return str(_typed(name, "str", default))


def env_int(name: str, default: int) -> int:
    """Return the variable as an int, or ``default`` when unset or empty."""
    return int(_typed(name, "int", default))


@overload
def env_float(name: str, default: float) -> float: ...
@overload
def env_float(name: str, default: None) -> float | None: ...
def env_float(name: str, default: float | None) -> float | None:
    """Return the variable as a float, or ``default`` (which may be None) when unset or empty."""
    value = _typed(name, "float", default)
    return None if value is None else float(value)


def env_bool(name: str, default: bool) -> bool:
    """Return the variable as a bool: 1/true/yes/on or 0/false/no/off, case-insensitive."""
    return bool(_typed(name, "bool", default))


def env_list(name: str, default: list[str]) -> list[str]:
    """Return the variable split on commas, items stripped and empty items dropped."""
    return list(_typed(name, "list", default))


def env_networks(name: str) -> list[str]:
    """Return the variable as a list of networks (CIDRs such as ``10.0.0.0/8``, or bare addresses), each checked."""
    values = env_list(name, [])
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {value!r} is not a network (CIDR such as 10.0.0.0/8)") from None
    return values
