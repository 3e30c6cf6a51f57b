"""Which event loop runs the asyncio pool: asyncio's own by default, uvloop when the worker is asked for it
(``taskworker --event-loop uvloop``, ``WorkerConfig.event_loop``). uvloop is an optional extra
(``pip install taskq[uvloop]``): a worker that does not ask for it never imports it."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable

from taskq.queues.engine import extras
from taskq.queues.engine.errors import ValidationError

from ..config import EVENT_LOOPS


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the loop named ``name``; a named error when it is unknown or not installed."""
    if name == "asyncio":
        return asyncio.new_event_loop
    if name == "uvloop":
        extras.require("uvloop", "the uvloop event loop", op="taskworker --event-loop")
        uvloop = importlib.import_module("uvloop")  # optional: the taskq[uvloop] extra
        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        return factory
    raise ValidationError(
        f"event loop must be one of {', '.join(EVENT_LOOPS)}, got {name!r}", op="taskworker --event-loop"
    )
