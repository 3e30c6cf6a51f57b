"""What the asynq parts of the Inspector share: their core (the queue check a read starts with), the run of the
read scripts of ``asynq/lua`` (``reads_*.lua``), and the refusal of what asynq's format cannot hold.

Every command goes through the shared ``InspectorCore`` (``send``, ``batch``, ``each``) and the broker's ``run``:
no road to Redis of its own. asynq's prefix is fixed, so the broker's own key prefix plays no part here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, NoReturn

from ... import validation as check
from ...errors import EngineError, FormatUnsupportedError, QueueNotFoundError
from ...inspection.inspector_core import InspectorCore
from ...quoting import shown
from ...sans_io import Pipeline
from ...transitions import Call
from ..keys import ALL_QUEUES


class AsynqInspectorCore(InspectorCore):
    """The core of an inspector over asynq's keys: a queue exists when it is in ``asynq:queues`` (as asynq's
    ``checkQueueExists``), and there is no key layout to check (asynq's keys carry no stamp of taskq's; taskq's
    check would misread them)."""

    def known(self, queue: str, op: str, task_id: str | None = None) -> str:
        check.queue_name(queue, f"inspector.{op}")
        if not self.send(op, "sismember", ALL_QUEUES, queue):
            raise QueueNotFoundError(f"no queue named {shown(queue)}", op=f"inspector.{op}")
        if task_id is not None:
            check.task_id(task_id, f"inspector.{op}")
        return queue

    def check_layout(self, op: str) -> None:
        """Nothing to check: asynq's layout is fixed by asynq."""


def run_all(core: InspectorCore, calls: list[Call]) -> list[Any]:
    """The replies of read scripts sent in one round trip, in order; the first error among them is raised."""
    if not calls:
        return []
    replies = core.broker.run_pipeline(Pipeline(calls))
    for reply in replies:
        if isinstance(reply, EngineError):
            raise reply
    return replies


def now_utc(core: InspectorCore) -> datetime:
    """The inspector's clock, as a UTC datetime."""
    return datetime.fromtimestamp(core.broker.clock.now(), UTC)


def unsupported(what: str, op: str, area: str = "inspector") -> NoReturn:
    """Refuse what asynq's format cannot hold, naming it; ``op`` is the refused method (of ``area``)."""
    raise FormatUnsupportedError(f"not available in asynq's key format: {what}", op=f"{area}.{op}")


def refusing(cls: type[Any], names: Iterable[str], what: str, area: str = "inspector") -> None:
    """Give ``cls`` a method for each of ``names`` that refuses (``unsupported``) whatever it is given: the methods
    of a taskq class that have nothing to act on in asynq's format."""
    for name in names:
        setattr(cls, name, _refusal(name, what, area))


def _refusal(name: str, what: str, area: str) -> Callable[..., NoReturn]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        unsupported(what, name, area)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = (
        f"Refused: not available in asynq's key format: {what}.\n\nRaises:\n    FormatUnsupportedError: always."
    )
    return refuse
