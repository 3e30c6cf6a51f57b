"""Bases of what holds a broker: the stores that keep one kind of record through it, and the entry points that own
it (and close it)."""

from __future__ import annotations

from typing import Any, Self

from .sync import Broker


class BrokerStore:
    """Base of the stores that keep one kind of record (workers, schedulers, the event export) in Redis through
    a broker. Each command's operation is named ``<area>.<op>``, so an error says which store and call failed."""

    area = "store"

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.keys = broker.keys

    def _call(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return self.broker.command(f"{self.area}.{op}", fn, *args, **kwargs)


class BrokerOwner:
    """Base of the entry points that own their broker (Client, Inspector): ``close()`` releases its connections,
    and ``with`` closes it at the end of the block."""

    broker: Broker

    def close(self) -> None:
        self.broker.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
