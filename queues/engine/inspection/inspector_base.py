"""What every part of the Inspector shares: the broker (its connection, key builders, transitions and clock),
the operator's name, and the checks a read or an action starts with.

Every command goes through ``_redis`` (or ``_drive`` for a sans-io flow), which names the operation
``inspector.<op>`` and raises redis-py's errors as the engine's: the CLI and the console tell an inspector's
failure by that prefix.
"""

from __future__ import annotations

import time
from typing import Any, Unpack

import redis

from .. import process_defaults
from .. import validation as check
from ..broker import Broker, BrokerOptions, BrokerOwner
from ..errors import QueueNotFoundError
from ..policies import PolicyCache
from ..quoting import shown
from ..sans_io import Flow, drive, run_command

MAX_PAGE_SIZE = 1000
#: Seconds an inspector trusts its last key layout check before an action: a console that runs while
#: ``migrate-keys`` moves the keyspace on stops acting within that time.
LAYOUT_RECHECK = 1.0


class InspectorBase(BrokerOwner):
    """``Inspector(redis_url)``; ``actor`` is recorded in the event of every action it takes. Before an action it
    checks the keyspace's key layout (again after ``layout_recheck`` seconds)."""

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        actor: str = "operator",
        layout_recheck: float = LAYOUT_RECHECK,
        payload_limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
        **options: Unpack[BrokerOptions],
    ):
        # Given no URL or prefix, where a bare Client() of this process would write (see process_defaults).
        if "prefix" not in options:  # asked only when not given: the default reads the environment
            options["prefix"] = process_defaults.key_prefix()
        self.broker = Broker(redis_url or process_defaults.redis_url(), **options)
        self.payload_limits = payload_limits  # what an edited payload may be, as for a producer
        self.keys = self.broker.keys
        self.ops = self.broker.transitions
        self.actor = actor
        self.policies = PolicyCache(self.keys)
        self.layout_recheck = layout_recheck
        self._layout_checked_at: float | None = None  # time.monotonic() of the last check that passed

    @property
    def conn(self) -> redis.Redis:
        return self.broker.conn

    def _redis(self, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return self.broker.command(f"inspector.{op}", fn, *args, **kwargs)

    def _drive(self, op: str, flow: Flow) -> Any:
        """Run a sans-io read flow (``series``, ``error_groups``, ``workflows``) to its value."""
        return drive(flow, lambda request: self._redis(op, run_command, self.conn, request))

    def _known(self, queue: str, op: str, task_id: str | None = None) -> str:
        """The queue of a read, which must exist; with ``task_id`` (a task's or a workflow's), that id must be
        well formed too."""
        check.queue_name(queue, f"inspector.{op}")
        if not self._redis(op, self.conn.sismember, self.keys.queues, queue):
            raise QueueNotFoundError(f"no queue named {shown(queue)}", op=f"inspector.{op}")
        if task_id is not None:
            check.task_id(task_id, f"inspector.{op}")
        return queue

    def _acting_on(self, queue: str, op: str, task_id: str | None = None) -> str:
        """The queue of an action: our key layout first (in another one, even whether the queue exists may be
        misread), then as ``_known``."""
        self._check_layout(op)
        return self._known(queue, op, task_id)

    def _check_layout(self, op: str) -> None:
        """Raise LayoutVersionError before an action on a keyspace at another key layout. Reads only: unlike a
        client's first write, an operator's action does not stamp an unstamped keyspace."""
        now = time.monotonic()
        if self._layout_checked_at is not None and now - self._layout_checked_at < self.layout_recheck:
            return
        self.broker.check_layout(f"inspector.{op}", stamp=False)
        self._layout_checked_at = now

    @staticmethod
    def _paged(op: str, page: int, size: int, size_name: str = "size") -> tuple[int, int]:
        """A page number (from 1) and a page size (up to ``MAX_PAGE_SIZE``), checked."""
        return check.count(page, "page", 1, 10**9, op), check.count(size, size_name, 1, MAX_PAGE_SIZE, op)
