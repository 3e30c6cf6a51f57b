"""The enqueue script's reply, parsed once: whether the queue is new, or the ``Refusal`` of one task of the call
(``lua/enqueue.lua`` answers a refused task with ``{code, i}``, not with an error), from which the named error is
built with a message naming the task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import DuplicateTaskError, EngineError, TaskIdConflictError
from .message import TaskMessage
from .quoting import shown


class Placed(Protocol):
    """A task of an enqueue call (``transitions.Placement``)."""

    message: TaskMessage


@dataclass(frozen=True)
class Refusal:
    """The enqueue script refused one task of its call, and wrote nothing (but its barrier): ``code`` says why
    ("CONFLICT": the task's id exists; "DUPLICATE": its unique lock is held), ``position`` which task of the call
    (from 0). Parsed once from the script's reply; the errors are built from it (``describe``)."""

    code: str
    position: int

    def describe(self, items: Sequence[Placed]) -> tuple[type[EngineError], str]:
        """The error to raise for the refused task of ``items`` (the call's), and its message naming the task."""
        message = items[self.position].message
        if self.code == "DUPLICATE":
            return DuplicateTaskError, (
                f"a unique task of type {shown(message.type)} with the same payload already holds its lock in queue "
                f"{shown(message.queue)}; nothing was enqueued"
            )
        return TaskIdConflictError, (
            f"task id {shown(message.id)} already exists in queue {shown(message.queue)}; nothing was enqueued"
        )


def enqueued(reply: Any) -> bool | Refusal:
    """The enqueue script's reply: True when the queue had no event stream (the caller then lists it), False when
    it had one, or the ``Refusal`` of one task."""
    if type(reply) is list:
        code, number = reply
        return Refusal(code.decode() if isinstance(code, bytes) else code, int(number) - 1)
    return bool(reply == b"NEW")


def enqueued_or_refused(items: Sequence[Placed], op: str, reply: Any) -> bool:
    """``enqueued``, with a refusal raised as its named error."""
    outcome = enqueued(reply)
    if type(outcome) is Refusal:
        kind, text = outcome.describe(items)
        raise kind(text, op=op)
    return bool(outcome)
