"""asynq's queues as they are now: the queue set, each queue's sizes per state, latency, approximate memory and
today's and all-time counters (``QueueInfo``), as asynq's Inspector reads them (``CurrentStats``).

Sizes and counters come from one read script per queue (``reads_queue_stats.lua``), so a queue is read at one
instant, aggregating tasks included (the sum of its group sets); memory from another (``reads_memory.lua``,
asynq's sampling rule). Many queues are read in one pipelined round trip each way.

asynq keeps no per-type counts and no queue definitions or archive limits of ours: those read as none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ... import validation as check
from ...inspection.queue_stats import FLEET_COUNTS, MEMORY_SAMPLE, FleetSummary, QueueInfo, QueueReads
from ...policies import QueueSpec
from ...sans_io import Command
from ...transitions import ArchiveLimits, Call
from .. import scripts
from ..keys import ALL_QUEUES, ALL_SERVERS, AsynqQueueKeys
from .reads_core import now_utc, run_all

#: Groups whose tasks are sampled for a queue's memory, as asynq samples them.
MEMORY_GROUP_SAMPLE = 5
#: asynq's archive limits: hard-coded in asynq (``maxArchiveSize``, ``archivedExpirationInDays``).
ASYNQ_ARCHIVE_LIMITS = ArchiveLimits(max_size=10_000, max_age=90 * 86400.0)


def stats_call(queue: str, today: datetime) -> Call:
    """The read of one queue's sizes and counters (``reads_queue_stats.lua``)."""
    q = AsynqQueueKeys(queue)
    keys = [q.pending, q.active, q.scheduled, q.retry, q.archived, q.completed]
    keys += [q.processed(today), q.failed(today), q.processed_total, q.failed_total, q.paused, q.groups]
    return scripts.call("inspector.queue_info", "reads_queue_stats", keys, [q.task_prefix, q.group("")])


def memory_call(queue: str, sample: int) -> Call:
    """The read of one queue's approximate memory (``reads_memory.lua``)."""
    q = AsynqQueueKeys(queue)
    keys = [q.active, q.pending, q.scheduled, q.retry, q.archived, q.completed, q.groups]
    return scripts.call(
        "inspector.queue_info", "reads_memory", keys, [q.task_prefix, sample, MEMORY_GROUP_SAMPLE, q.group("")], int
    )


def _info(queue: str, reply: list[Any], now: float) -> QueueInfo:
    pending, active, scheduled, retry, archived, completed = (int(n) for n in reply[:6])
    info = QueueInfo(queue, pending, active, scheduled, retry, archived, completed, aggregating=int(reply[12]))
    info.processed_today, info.failed_today, info.processed_total, info.failed_total = (int(n) for n in reply[6:10])
    info.paused = bool(reply[10])
    since_ns = int(reply[11])
    if since_ns:
        info.latency = max(0.0, now - since_ns / 1e9)
    return info


class AsynqQueueReads(QueueReads):
    """asynq's queue set and each queue's state now (``QueueReads``' methods, over asynq's keys)."""

    def queues(self) -> list[str]:
        """Every queue's name (``asynq:queues``), sorted.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return sorted(name.decode() for name in self.core.send("queues", "smembers", ALL_QUEUES))

    def queue_infos(self, queues: list[str], memory_sample: int = MEMORY_SAMPLE) -> list[QueueInfo]:
        """The QueueInfo of many queues in two round trips (one without memory: ``memory_sample`` 0). Names are not
        checked against the queue set: an unknown queue reads as empty.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        infos = self.counted(queues)[0]
        if memory_sample > 0:
            usages = run_all(self.core, [memory_call(info.queue, memory_sample) for info in infos])
            for info, usage in zip(infos, usages, strict=True):
                info.memory_bytes = int(usage)
        return infos

    def counted(
        self, queues: list[str], also: list[Command] | None = None
    ) -> tuple[list[QueueInfo], list[bytes | None], list[Any]]:
        """Each queue's sizes, counters and latency (a QueueInfo without memory); the second item is empty (asynq's
        latency is read with the counts), the replies of the commands ``also`` sends come third.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        day = now_utc(self.core)
        now = self.core.broker.clock.now()
        replies = run_all(self.core, [stats_call(queue, day) for queue in queues])
        infos = [_info(queue, reply, now) for queue, reply in zip(queues, replies, strict=True)]
        return infos, [], self.core.batch("queue_info", list(also or ()))

    def fleet_summary(self, queues: list[str]) -> FleetSummary:
        """The summary bar from ``counted``'s read script per queue (asynq's sizes are not one command each).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        infos, _, (servers_up,) = self.counted(queues, [self.servers_up()])
        totals = {name: sum(getattr(info, name) for info in infos) for name in FLEET_COUNTS}
        return FleetSummary(**totals, servers_up=int(servers_up))

    def servers_up(self) -> Command:
        """The count of servers whose heartbeat is current: ``asynq:servers`` is scored by expiry, in Unix seconds."""
        return Command("zcount", (ALL_SERVERS, int(self.core.broker.clock.now()), "+inf"))

    def outstanding(self, queue: str) -> int:
        """Tasks of ``queue`` a worker has yet to take or finish: pending, leased, and scheduled or retry tasks due
        by this inspector's clock (asynq scores them in Unix seconds), read in one MULTI.

        Raises:
            ValidationError: the queue name is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        q = AsynqQueueKeys(check.queue_name(queue, "inspector.outstanding"))
        now = int(self.core.broker.clock.now())
        commands = [
            Command("llen", (q.pending,)),
            Command("zcard", (q.lease,)),
            Command("zcount", (q.scheduled, "-inf", now)),
            Command("zcount", (q.retry, "-inf", now)),
        ]
        return sum(self.core.batch("outstanding", commands, atomic=True))

    def type_counts_of(self, queues: list[str], keep_zero: bool = False) -> dict[str, dict[str, dict[str, int]]]:
        """Per-type counts: asynq keeps none (its scripts count per queue only), so each queue has none
        (``type_counts`` too).

        Raises:
            nothing: nothing is read.
        """
        return {queue: {} for queue in queues}

    def queue_definition(self, queue: str) -> QueueSpec | None:
        """None: asynq queues have no definition of ours (cap, rate limit); a server's weights are its own.

        Raises:
            nothing: nothing is read.
        """
        return None

    def archive_limits(self, queue: str) -> ArchiveLimits:
        """asynq's own archive limits, fixed in asynq: 10,000 tasks, 90 days.

        Raises:
            nothing: nothing is read.
        """
        return ASYNQ_ARCHIVE_LIMITS
