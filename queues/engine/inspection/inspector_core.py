"""What every part of the Inspector shares: the broker (its key builders, transitions and clock), the policy cache,
the limits of an edited payload, and the checks a read or an action starts with.

Every command goes through the broker's calls (``send``, ``batch``, ``drive`` here), which name the operation
``inspector.<op>`` and raise redis-py's errors as the engine's: the CLI and the console tell an inspector's
failure by that prefix.

One core serves every request of a process (the console's threads among them): it keeps nothing about a request.
The actor an action records is handed to each action; the time of the last key layout check is shared on purpose.
"""

from __future__ import annotations

import time
from typing import Any

from .. import validation as check
from ..broker import Broker
from ..errors import QueueNotFoundError
from ..policies import PolicyCache, PolicySet
from ..quoting import shown
from ..sans_io import Batch, Command, Flow

MAX_PAGE_SIZE = 1000
#: Seconds an inspector trusts its last key layout check before an action: a console that runs while
#: ``migrate-keys`` moves the keyspace on stops acting within that time.
LAYOUT_RECHECK = 1.0


class InspectorCore:
    """The broker and the checks the parts share. Before an action it checks the keyspace's key layout (again
    after ``layout_recheck`` seconds)."""

    def __init__(
        self,
        broker: Broker,
        *,
        layout_recheck: float = LAYOUT_RECHECK,
        payload_limits: check.PayloadLimits = check.DEFAULT_PAYLOAD_LIMITS,
    ) -> None:
        self.broker = broker
        self.keys = broker.keys
        self.ops = broker.transitions
        self.policies = PolicyCache(self.keys)  # thread-safe: shared by every request
        self.payload_limits = payload_limits  # what an edited payload may be, as for a producer
        self.layout_recheck = layout_recheck
        # time.monotonic() of the last check that passed. Threads race on it harmlessly: each writes a float, and
        # the worst a lost write costs is one more check.
        self._layout_checked_at: float | None = None

    @property
    def database(self) -> int:
        """The database the broker's client selects (it names the cancel and control channels): a setting of the
        client, read without a command."""
        return self.broker.database

    def send(self, op: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """One command, by its redis-py method name, as operation ``inspector.<op>``."""
        return self.broker.send(f"inspector.{op}", name, *args, **kwargs)

    def batch(self, op: str, commands: list[Command], atomic: bool = False) -> list[Any]:
        """Commands sent together in one round trip, as operation ``inspector.<op>``: their replies, in order.
        Reads need no MULTI (see ``sans_io.Batch``) unless ``atomic``. Nothing is sent for no command."""
        if not commands:
            return []
        return list(self.broker.execute(f"inspector.{op}", Batch(commands, atomic)))

    def each(self, op: str, name: str, args: list[tuple[Any, ...]]) -> list[Any]:
        """Command ``name`` once per item of ``args``, in one round trip: their replies, in order."""
        return self.batch(op, [Command(name, arg) for arg in args])

    def drive(self, op: str, flow: Flow) -> Any:
        """Run a sans-io read flow (``series``, ``error_groups``, ``workflows``) to its value."""
        return self.broker.drive(f"inspector.{op}", flow)

    def policy_set(self, op: str) -> PolicySet:
        """The policies mirrored from the admin, re-read when they changed (``PolicyCache``)."""
        policies: PolicySet = self.drive(op, self.policies.flow())
        return policies

    def known(self, queue: str, op: str, task_id: str | None = None) -> str:
        """The queue of a read, which must exist; with ``task_id`` (a task's or a workflow's), that id must be
        well formed too."""
        check.queue_name(queue, f"inspector.{op}")
        if not self.send(op, "sismember", self.keys.queues, queue):
            raise QueueNotFoundError(f"no queue named {shown(queue)}", op=f"inspector.{op}")
        if task_id is not None:
            check.task_id(task_id, f"inspector.{op}")
        return queue

    def acting_on(self, queue: str, op: str, task_id: str | None = None) -> str:
        """The queue of an action: our key layout first (in another one, even whether the queue exists may be
        misread), then as ``known``."""
        self.check_layout(op)
        return self.known(queue, op, task_id)

    def check_layout(self, op: str) -> None:
        """Raise LayoutVersionError before an action on a keyspace at another key layout. Reads only: unlike a
        client's first write, an operator's action does not stamp an unstamped keyspace."""
        now = time.monotonic()
        checked = self._layout_checked_at
        if checked is not None and now - checked < self.layout_recheck:
            return
        self.broker.check_layout(f"inspector.{op}", stamp=False)
        self._layout_checked_at = now

    @staticmethod
    def paged(op: str, page: int, size: int, size_name: str = "size") -> tuple[int, int]:
        """A page number (from 1) and a page size (up to ``MAX_PAGE_SIZE``), checked."""
        return check.count(page, "page", 1, 10**9, op), check.count(size, size_name, 1, MAX_PAGE_SIZE, op)
