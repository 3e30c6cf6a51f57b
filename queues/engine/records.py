"""Copying a record's attributes into a dict under their own names.

The API, the CLI and the History page each build JSON documents from engine records and database rows; most
fields keep the record's name and value, and only the rest (times, payloads, computed figures) need a line of
their own."""

from __future__ import annotations

from typing import Any


def picked(record: object, names: str) -> dict[str, Any]:
    """``{name: record.name}`` for each of the space-separated ``names``, in that order."""
    return {name: getattr(record, name) for name in names.split()}
