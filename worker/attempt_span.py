"""An attempt's consumer span, as the worker's threads hold it (made and described by worker/attempt_tracing.py),
and the carrying of its context to where a handler runs: another thread or asyncio task (``attach``), or a handler
process (``carrier``, then ``attached`` in the child)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskq.queues.engine import tracing

try:  # optional: otel
    from opentelemetry import context as otel_context
    from opentelemetry.trace import Status, StatusCode
except ImportError:
    otel_context = None  # type: ignore[assignment]


class AttemptSpan:
    """One attempt's span and the context that makes it current."""

    __slots__ = ("context", "span")

    def __init__(self, span: Any, context: Any) -> None:
        self.span, self.context = span, context

    def attach(self) -> object:
        """Make the span current in this thread (or asyncio task); returns the token ``detach`` takes."""
        return otel_context.attach(self.context)

    @staticmethod
    def detach(token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def carrier(self) -> dict[str, str]:
        """The span's context as W3C headers, for a handler process to make it current there."""
        return tracing.inject({}, context=self.context)

    def lease_lost(self, why: str) -> None:
        """The fenced acknowledgement was refused (or never written before the lease ran out): another attempt owns
        the task, and what this one decided was discarded."""
        self.span.set_attribute("taskq.outcome", "lease_lost")
        self.span.set_status(Status(StatusCode.ERROR, f"lease lost: {why}"))

    def end(self) -> None:
        self.span.end()


def attached(carrier: Mapping[str, str] | None) -> object | None:
    """Make the context of ``carrier`` (W3C headers, as ``AttemptSpan.carrier`` gives them) current in this thread;
    returns the token to ``detach``, or None when there is none to attach (no headers, or no extra)."""
    if not carrier or not tracing.available():
        return None
    return otel_context.attach(tracing.extract(carrier))


def detach(token: object | None) -> None:
    """Undo ``attached`` (nothing for None)."""
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]
