"""Stops a long-running process (the worker, the scheduler) before it writes a keyspace of another key layout.

The process checks once before it starts (a refusal raises at once) and then before each round of writes (its
heartbeat, its scheduling round): when ``tasks migrate-keys`` moved the keyspace on while the process ran, the
round writes nothing, ``refused`` is set so the process stops, and ``raise_refusal`` makes it exit non-zero with
the error naming both layouts. See ``taskq.queues.engine.layout``.
"""

from __future__ import annotations

import logging
import threading

from taskq.queues.engine import LayoutVersionError, RedisUnavailableError
from taskq.queues.engine.broker import Broker

log = logging.getLogger("worker")


class LayoutGuard:
    def __init__(self, broker: Broker, op: str, refused: threading.Event | None = None) -> None:
        self.broker = broker
        self.op = op
        self.refused = refused or threading.Event()  # may be the process's own "stop now" event
        self.refusal: LayoutVersionError | None = None

    def check_at_start(self) -> None:
        """Raise LayoutVersionError for another layout; with Redis unreachable, leave it to the first round."""
        try:
            self.broker.check_layout(self.op)
        except RedisUnavailableError as exc:
            log.warning("cannot check the key layout yet: %s", exc)

    def check(self) -> bool:
        """True when the keyspace is at our layout; otherwise record the refusal, set ``refused`` and say False.
        Redis being unreachable is raised, as by any other round."""
        try:
            self.broker.check_layout(self.op)
        except LayoutVersionError as exc:
            if self.refusal is None:
                log.error("stopping: %s", exc)
            self.refusal = exc
            self.refused.set()
            return False
        return True

    def raise_refusal(self) -> None:
        if self.refusal is not None:
            raise self.refusal
