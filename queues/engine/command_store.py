"""The base of the stores that keep records in Redis with plain commands (workers, schedulers, the event export):
each command, and each batch of them, goes to Redis through the store's broker, its operation named
``<area>.<op>`` so that an error says which store and which call failed."""

from __future__ import annotations

from typing import Any

from .broker import BrokerStore
from .sans_io import Batch, Command


def command(name: str, *args: Any, **kwargs: Any) -> Command:
    """A plain command by its redis-py method name, written as a call: ``command("hget", key, field)``."""
    return Command(name, args, kwargs)


class CommandStore(BrokerStore):
    """A ``BrokerStore`` that sends plain commands (see the module docstring)."""

    def _send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One command, by its redis-py method name."""
        return self.broker.send(f"{self.area}.{op}", name, *args, **kwargs)

    def _batch(self, op: str, commands: list[Command]) -> list[Any]:
        """Commands sent together (one MULTI where their keys allow it, see ``sans_io.Batch``); their replies in
        order. No commands, no round trip."""
        if not commands:
            return []
        return list(self.broker.execute(f"{self.area}.{op}", Batch(commands)))
