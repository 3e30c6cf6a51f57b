"""Typed readers for environment variables, used by settings.py.

Unset and empty variables both mean "use the default", so a compose file can write ``FOO: ""`` to fall back.
A value that is set but cannot be parsed raises ImproperlyConfigured naming the variable, so a typo fails at
startup instead of silently running with a default.
"""

from __future__ import annotations

import os
from typing import overload

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def env_str(name: str, default: str) -> str:
    """Return the variable as a string, or ``default`` when unset or empty."""
    value = _raw(name)
    return default if value is None else value


def env_int(name: str, default: int) -> int:
    """Return the variable as an int, or ``default`` when unset or empty."""
    value = _raw(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


@overload
def env_float(name: str, default: float) -> float: ...
@overload
def env_float(name: str, default: None) -> float | None: ...
def env_float(name: str, default: float | None) -> float | None:
    """Return the variable as a float, or ``default`` (which may be None) when unset or empty."""
    value = _raw(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None


def env_bool(name: str, default: bool) -> bool:
    """Return the variable as a bool: 1/true/yes/on or 0/false/no/off, case-insensitive."""
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/true/yes/on or 0/false/no/off, got {value!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    """Return the variable split on commas, items stripped and empty items dropped."""
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]
