"""Queues as they are now: the queue set, each queue's size per state, latency, approximate memory and today's
and all-time counters (``QueueInfo``), per-type counts, the work a worker has yet to do, and the queue's
definition and archive limits as mirrored from the admin.

Reads use O(1) commands or ranges and a sample for memory, never full scans, so they stay fast on queues of
millions; many queues are read in a fixed number of round trips (the dashboard and /metrics read them all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import validation as check
from ..clock import to_ms, utc_day
from ..keys import STATES
from ..policies import QueueSpec
from ..records import picked
from ..sans_io import Command
from ..transitions import ArchiveLimits
from .inspector_core import InspectorCore

_SORTED_SET_STATES = ("active", "scheduled", "retry", "archived", "completed")
_MEMORY_STATES = ("pending",) + _SORTED_SET_STATES + ("waiting",)
#: Groups of a queue whose aggregating tasks are sampled for its memory (the first ones SSCAN returns: the same
#: ones while the groups stay, so an idle queue's memory reads the same on every load).
MEMORY_GROUPS = 4
MEMORY_SAMPLE = 20  # tasks per state whose MEMORY USAGE is read and extrapolated, as asynq does


@dataclass
class QueueInfo:
    queue: str
    pending: int = 0
    active: int = 0
    scheduled: int = 0
    retry: int = 0
    archived: int = 0
    completed: int = 0
    aggregating: int = 0
    waiting: int = 0  # tasks waiting for their dependencies (not one of asynq's states; see workflows.py)
    paused: bool = False
    latency: float = 0.0  # seconds the oldest pending task has waited
    memory_bytes: int = 0  # approximate
    processed_today: int = 0
    failed_today: int = 0
    processed_total: int = 0
    failed_total: int = 0

    @property
    def size(self) -> int:
        """Tasks in the queue, completed ones excluded (as asynq counts it)."""
        return (
            self.pending + self.active + self.scheduled + self.retry + self.archived + self.aggregating + self.waiting
        )

    def counts(self) -> dict[str, int]:
        return {state: getattr(self, state) for state in STATES}

    def live_counts(self) -> dict[str, int]:
        """What the live console sends per queue on every update: each state's size (waiting too), ``size``,
        ``paused`` (0/1) and the four counters, computed as the pages compute them on a fresh load."""
        return {
            **self.counts(),
            "size": self.size,
            "paused": int(self.paused),
            **picked(self, "processed_today failed_today processed_total failed_total"),
        }


#: The queue counts the summary bar adds up, in its order.
FLEET_COUNTS = ("processed_today", "failed_today", "active", "pending", "scheduled", "retry", "archived")


@dataclass
class FleetSummary:
    """Every queue (of a scope) at a glance: today's counters and the sizes added up, and the servers up."""

    processed_today: int = 0
    failed_today: int = 0
    active: int = 0  # tasks running now: "busy"
    pending: int = 0  # "enqueued"
    scheduled: int = 0
    retry: int = 0
    archived: int = 0
    servers_up: int = 0


def count_unlisted(info: QueueInfo, type_counts: dict[bytes, bytes]) -> None:
    """Aggregating and waiting tasks live in many structures (one per group, one per dependency), so their
    totals come from the per-type counts the scripts keep."""
    for name, value in type_counts.items():
        state = name.partition(b":")[0]
        if state == b"aggregating":
            info.aggregating += int(value)
        elif state == b"waiting":
            info.waiting += int(value)


class QueueReads:
    """The queue set and each queue's state now."""

    def __init__(self, core: InspectorCore) -> None:
        self.core = core
        self.keys = core.keys

    def queues(self) -> list[str]:
        """Every queue's name, sorted.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return sorted(name.decode() for name in self.core.send("queues", "smembers", self.keys.queues))

    def queue_info(self, queue: str) -> QueueInfo:
        """The queue's sizes per state, today's and all-time counts, latency and memory.

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "queue_info")
        return self.queue_infos([queue])[0]

    def queue_infos(self, queues: list[str], memory_sample: int = MEMORY_SAMPLE) -> list[QueueInfo]:
        """The QueueInfo of many queues in three round trips, however many queues (for the dashboard and
        /metrics). Names are not checked against the queue set: an unknown queue reads as empty.
        ``memory_sample`` 0: no memory figure (``memory_bytes`` stays 0), for the readers that want only sizes and
        latency (the time series sampler): two round trips, and nothing read per task.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        infos, oldest, _ = self.counted(queues)
        self._latency_and_memory(infos, oldest, memory_sample)
        return infos

    def counted(
        self, queues: list[str], also: list[Command] | None = None
    ) -> tuple[list[QueueInfo], list[bytes | None], list[Any]]:
        """Each queue's sizes and counters (a QueueInfo without latency nor memory) and its oldest pending id, in
        one round trip; the replies of the commands ``also`` sends with them come third.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        day = utc_day(self.core.broker.clock.now())
        commands: list[Command] = []
        for queue in queues:
            q = self.keys.queue(queue)
            commands.append(Command("llen", (q.pending,)))
            commands += [Command("zcard", (q.state_key(state),)) for state in _SORTED_SET_STATES]
            commands.append(Command("exists", (q.paused,)))
            # Not MGET: a cluster pipeline refuses multi-key commands.
            commands += [Command("get", (c,)) for c in (q.processed_on(day), q.failed_on(day), q.processed, q.failed)]
            commands.append(Command("lindex", (q.pending, -1)))
            # Aggregating and waiting tasks are counted per type by the scripts.
            commands.append(Command("hgetall", (q.type_counts,)))
        replies = iter(self.core.batch("queue_info", commands + list(also or ())))
        infos, oldest = [], []
        for queue in queues:
            sizes = [next(replies) for _ in range(7)]
            info = QueueInfo(
                queue,
                pending=sizes[0],
                active=sizes[1],
                scheduled=sizes[2],
                retry=sizes[3],
                archived=sizes[4],
                completed=sizes[5],
                paused=bool(sizes[6]),
            )
            info.processed_today, info.failed_today, info.processed_total, info.failed_total = (
                int(next(replies) or 0) for _ in range(4)
            )
            infos.append(info)
            oldest.append(next(replies))
            count_unlisted(info, next(replies))
        return infos, oldest, list(replies)

    def fleet_summary(self, queues: list[str]) -> FleetSummary:
        """The console's summary bar: ``queues``' sizes and today's counters added up, and the servers whose
        heartbeat is current, in one round trip however many queues. Only what the bar shows is read (``bar_reads``:
        seven commands a queue, not the twelve of ``counted``): every console page renders the bar, so with 200
        queues these are most of a page's Redis commands. An unknown queue reads as empty.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        day = utc_day(self.core.broker.clock.now())
        commands = [command for queue in queues for command in self.bar_reads(queue, day)]
        *counts, servers_up = self.core.batch("fleet_summary", [*commands, self.servers_up()])
        totals = dict.fromkeys(FLEET_COUNTS, 0)
        for index, value in enumerate(counts):
            totals[FLEET_COUNTS[index % len(FLEET_COUNTS)]] += int(value or 0)
        return FleetSummary(**totals, servers_up=int(servers_up))

    def bar_reads(self, queue: str, day: str) -> list[Command]:
        """A queue's figures of the summary bar, one command each, in the order of ``FLEET_COUNTS``."""
        q = self.keys.queue(queue)
        return [
            Command("get", (q.processed_on(day),)),
            Command("get", (q.failed_on(day),)),
            Command("zcard", (q.state_key("active"),)),
            Command("llen", (q.pending,)),
            *(Command("zcard", (q.state_key(state),)) for state in ("scheduled", "retry", "archived")),
        ]

    def servers_up(self) -> Command:
        """The count of servers whose heartbeat is current (their index is scored by its expiry, in ms)."""
        return Command("zcount", (self.keys.servers, to_ms(self.core.broker.clock.now()), "+inf"))

    def outstanding(self, queue: str) -> int:
        """Tasks of ``queue`` a worker has yet to take or finish: pending, active, and scheduled or retry tasks
        already due by this inspector's clock. One MULTI reads all four, so a task moving between them is never
        missed (``taskq.worker.testing.run_until_empty`` relies on it); the queue's keys share one hash tag.

        Raises:
            ValidationError: the queue name is malformed.
            RedisUnavailableError: Redis cannot be reached.
        """
        q = self.keys.queue(check.queue_name(queue, "inspector.outstanding"))
        now_ms = to_ms(self.core.broker.clock.now())
        return sum(
            self.core.batch(
                "outstanding",
                [
                    Command("llen", (q.pending,)),
                    Command("zcard", (q.lease,)),
                    Command("zcount", (q.scheduled, "-inf", now_ms)),
                    Command("zcount", (q.retry, "-inf", now_ms)),
                ],
                atomic=True,  # one instant: a task moving between two of them is counted once
            )
        )

    def _latency_and_memory(self, infos: list[QueueInfo], oldest: list[bytes | None], memory_sample: int) -> None:
        """Latency is the age of the oldest pending task. Memory is approximate: the structures' own usage plus
        a per-state sample of task hashes, extrapolated (as asynq does)."""
        reads: list[Command] = []
        # Without a sample no state is read: MEMORY USAGE with SAMPLES 0 walks every element of a structure, and a
        # range to index -1 lists every task, which at a backlog of millions stalls Redis and this process.
        plan = [
            self._memory_reads(reads, info, head, memory_sample)
            if memory_sample > 0
            else self._latency_read(reads, info, head)
            for info, head in zip(infos, oldest, strict=True)
        ]
        replies = iter(self.core.batch("queue_info", reads))
        now = self.core.broker.clock.now()
        samples: list[Command] = []
        scale: list[tuple[QueueInfo, int, int]] = []
        groups: list[tuple[QueueInfo, int, list[bytes]]] = []
        for info, states, head in zip(infos, plan, oldest, strict=True):
            since = next(replies) if head is not None else None
            if since:
                info.latency = max(0.0, now - int(since) / 1000)
            for _state, count in states:
                info.memory_bytes += next(replies) or 0
                ids = next(replies)
                samples += self._task_samples(info.queue, ids)
                scale.append((info, len(ids), count))
            if info.aggregating and memory_sample > 0:
                groups.append((info, next(replies), next(replies)[1][:MEMORY_GROUPS]))
        scale += self._aggregating_memory(groups, samples, memory_sample)
        usages = iter(self.core.batch("queue_info", samples) if scale else ())
        for info, sampled, count in scale:
            chunk = [next(usages) or 0 for _ in range(sampled)]
            if chunk:
                info.memory_bytes += int(sum(chunk) / len(chunk) * count)

    def _latency_read(self, reads: list[Command], info: QueueInfo, head: bytes | None) -> list[tuple[str, int]]:
        """Add to ``reads`` the oldest pending task's time only; no state is read for memory."""
        if head is not None:
            reads.append(Command("hget", (self.keys.queue(info.queue).task(head.decode()), "since")))
        return []

    def _memory_reads(
        self, reads: list[Command], info: QueueInfo, head: bytes | None, memory_sample: int
    ) -> list[tuple[str, int]]:
        """Add to ``reads`` what ``_latency_and_memory`` reads of one queue: the oldest pending task's time, each
        state's structure and first tasks, and the groups of its aggregating tasks. Returns the states read."""
        self._latency_read(reads, info, head)
        q = self.keys.queue(info.queue)
        states = [(state, getattr(info, state)) for state in _MEMORY_STATES if getattr(info, state)]
        for state, _count in states:
            key = q.state_key(state)
            reads.append(Command("memory_usage", (key,), {"samples": memory_sample}))
            reads.append(Command("lrange" if state == "pending" else "zrange", (key, 0, memory_sample - 1)))
        if info.aggregating:
            reads.append(Command("scard", (q.groups,)))
            reads.append(Command("sscan", (q.groups, 0), {"count": MEMORY_GROUPS}))
        return states

    def _aggregating_memory(
        self, groups: list[tuple[QueueInfo, int, list[bytes]]], samples: list[Command], memory_sample: int
    ) -> list[tuple[QueueInfo, int, int]]:
        """Aggregating tasks sit in one sorted set per group. The sampled groups' sets, extrapolated to all groups,
        count here; their first tasks are added to ``samples`` to be extrapolated to every aggregating task, as
        ``_latency_and_memory`` does per state."""
        sampled = [(info, total, names) for info, total, names in groups if names]
        if not sampled:
            return []
        reads: list[Command] = []
        for info, _total, names in sampled:
            q = self.keys.queue(info.queue)
            for name in names:
                reads.append(Command("memory_usage", (q.group(name.decode()),), {"samples": memory_sample}))
                reads.append(Command("zrange", (q.group(name.decode()), 0, memory_sample - 1)))
        replies = iter(self.core.batch("queue_info", reads))
        scale = []
        for info, total, names in sampled:
            sizes, ids = [], []
            for _name in names:
                sizes.append(next(replies) or 0)
                ids += next(replies)
            info.memory_bytes += int(sum(sizes) / len(sizes) * total)
            ids = ids[: max(1, memory_sample)]
            samples += self._task_samples(info.queue, ids)
            scale.append((info, len(ids), info.aggregating))
        return scale

    def _task_samples(self, queue: str, ids: list[bytes]) -> list[Command]:
        """The MEMORY USAGE of each sampled task's hash."""
        q = self.keys.queue(queue)
        return [Command("memory_usage", (q.task(task_id.decode()),), {"samples": 0}) for task_id in ids]

    def type_counts(self, queue: str) -> dict[str, dict[str, int]]:
        """Per task type: how many are in each state, plus processed and failed totals (kept by the scripts).

        Raises:
            ValidationError: the queue name is malformed.
            QueueNotFoundError: there is no queue of that name.
            RedisUnavailableError: Redis cannot be reached.
        """
        self.core.known(queue, "type_counts")
        return self.type_counts_of([queue])[queue]

    def type_counts_of(self, queues: list[str], keep_zero: bool = False) -> dict[str, dict[str, dict[str, int]]]:
        """type_counts of many queues in one round trip (unknown queues read as empty). With ``keep_zero`` a count
        that went back to 0 is kept: a state the type has been in (metrics keep its series alive).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        replies = self.core.each("type_counts", "hgetall", [(self.keys.queue(queue).type_counts,) for queue in queues])
        result: dict[str, dict[str, dict[str, int]]] = {}
        for queue, raw in zip(queues, replies, strict=True):
            out: dict[str, dict[str, int]] = {}
            for name, value in raw.items():
                state, _, task_type = name.decode().partition(":")
                if int(value) or keep_zero:
                    out.setdefault(task_type, {})[state] = int(value)
            result[queue] = out
        return result

    def queue_definition(self, queue: str) -> QueueSpec | None:
        """The queue's definition as mirrored from the admin (cap, rate limit, weight); None when not defined.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return self.core.policy_set("queue_definition").queues.get(queue)

    def archive_limits(self, queue: str) -> ArchiveLimits:
        """The queue's archive limits from the retention policies (engine-wide ``Limits`` where they set none).

        Raises:
            RedisUnavailableError: Redis cannot be reached.
        """
        return self.core.policy_set("archive_limits").archive_limits(queue)
