"""Bases of what holds a broker: the stores that keep one kind of record through it, and the entry points that own
it (and close it)."""

from __future__ import annotations

from typing import Any, Self

from ..sans_io import Batch, Command
from .sync import Broker


class BrokerStore:
    """Base of the stores that keep one kind of record (workers, schedulers, the event export) in Redis through
    a broker. Each command's operation is named ``<area>.<op>``, so an error says which store and call failed."""

    area = "store"

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.keys = broker.keys

    def _send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One command, by its redis-py method name."""
        return self.broker.send(f"{self.area}.{op}", name, *args, **kwargs)

    def _batch(self, op: str, commands: list[Command], atomic: bool = True) -> list[Any]:
        """Commands sent together (one MULTI where their keys allow it, unless ``atomic`` is False: see
        ``sans_io.Batch``); their replies in order. No commands, no round trip."""
        if not commands:
            return []
        return list(self.broker.execute(f"{self.area}.{op}", Batch(commands, atomic)))


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
