"""What periodic schedulers read and write in Redis, and what the console and CLI read about them:

* firing a tick (``lua/fire_tick.lua``): enqueue the entry's task, move its last handled tick and append to its
  history in one script, so a tick is enqueued once however many schedulers run;
* each entry's last handled tick and capped enqueue history (in the entry's queue's slot);
* scheduler heartbeats: each live scheduler and the entries it runs, expiring unless renewed;
* the entries defined in the admin, mirrored from the database with a version counter.

Only the engine talks to Redis; schedulers, the console and the CLI go through this class.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis

from . import producer
from .broker import Broker, BrokerStore
from .clock import from_ms, to_ms
from .errors import ValidationError
from .periodic import Entry, EntryNotFoundError
from .policies import PolicyCache
from .scripts import script
from .transitions import Call

log = logging.getLogger("queues.engine.scheduler")

HISTORY_CAP = 1000  # enqueues kept per entry, as asynq keeps


@dataclass
class EnqueueRecord:
    """One tick of an entry: when it was due, the task it enqueued, and whether a unique lock refused it."""

    tick: datetime | None
    task_id: str
    enqueued_at: datetime | None
    outcome: str  # "enqueued" or "duplicate"


@dataclass
class SchedulerInfo:
    id: str
    host: str
    pid: int
    started_at: datetime | None
    entry_ids: list[str] = field(default_factory=list)


@dataclass
class EntryInfo:
    """An entry as the console and CLI show it."""

    entry: Entry
    schedulers: list[str]
    next_run: datetime | None
    previous: EnqueueRecord | None
    last_tick: datetime | None

    @property
    def id(self) -> str:
        return self.entry.id


def _record(raw: bytes) -> EnqueueRecord:
    doc = json.loads(raw)
    return EnqueueRecord(
        from_ms(doc.get("tick")),
        str(doc.get("task_id", "")),
        from_ms(doc.get("at")),
        str(doc.get("outcome", "enqueued")),
    )


def _record_json(tick_ms: int, task_id: str, now_ms: int, outcome: str) -> str:
    return json.dumps({"tick": tick_ms, "task_id": task_id, "at": now_ms, "outcome": outcome}, separators=(",", ":"))


class SchedulerStore(BrokerStore):
    area = "scheduler"

    def __init__(self, broker: Broker, policies: PolicyCache | None = None, history_cap: int = HISTORY_CAP) -> None:
        super().__init__(broker)
        self.policies = policies
        self.history_cap = history_cap

    @property
    def conn(self) -> redis.Redis:
        return self.broker.conn

    # -- firing ticks -----------------------------------------------------------------------------------------

    def fire_call(self, entry: Entry, tick_ms: int, actor: str) -> Call:
        """The script call that enqueues ``entry``'s task for ``tick_ms``; validation (and the unique and
        retention policies of the admin) as ``enqueue`` applies them."""
        now = self.broker.clock.now()
        policies = self.policies.get(self.conn, "scheduler.fire") if self.policies is not None else None
        task_id = entry.task_id(tick_ms)
        placement = producer.plan(
            self.keys,
            now,
            entry.type,
            entry.payload,
            {**entry.options, "queue": entry.queue, "task_id": task_id},
            "scheduler.fire",
            policies=policies,
        )
        m = placement.message
        q = self.keys.queue(entry.queue)
        now_ms = to_ms(now)
        keys = [q.type_counts, q.events, q.pending, q.scheduled, q.cron_last, q.cron_history(entry.id)]
        args = [
            q.task_prefix,
            now_ms,
            self.broker.transitions.limits.event_maxlen,
            actor,
            entry.id,
            tick_ms,
            self.history_cap,
            _record_json(tick_ms, task_id, now_ms, "enqueued"),
            _record_json(tick_ms, task_id, now_ms, "duplicate"),
            m.id,
            m.type,
            placement.encoded_options or m.encode_options(),
            m.payload,
            placement.process_at_ms,
            placement.unique_key,
            placement.unique_ttl_ms,
        ]
        return Call("fire_tick", script("fire_tick"), keys, args, lambda reply: reply.decode())

    def fire(self, entry: Entry, tick: float, actor: str = "scheduler") -> str:
        """Enqueue the entry's task for ``tick`` (epoch seconds). Returns "enqueued", "duplicate" (a unique lock
        of an earlier run was held) or "exists"; raises TaskIdConflictError when this tick (or a later one) was
        handled already, by this scheduler or another."""
        status = self.broker.run(self.fire_call(entry, to_ms(tick), actor))
        if status == "NEW":
            self._call("fire", self.conn.sadd, self.keys.queues, entry.queue)
        return {"OK": "enqueued", "NEW": "enqueued", "DUPLICATE": "duplicate", "EXISTS": "exists"}[status]

    def last_ticks(self, entries: Iterable[Entry]) -> dict[str, float | None]:
        """Each entry's last handled tick (epoch seconds), None for an entry no scheduler has seen yet."""
        entries = list(entries)
        pipe = self.conn.pipeline(transaction=False)
        for entry in entries:
            pipe.hget(self.keys.queue(entry.queue).cron_last, entry.id)
        replies = self._call("last_ticks", pipe.execute) if entries else []
        return {e.id: (None if raw is None else int(raw) / 1000) for e, raw in zip(entries, replies, strict=True)}

    def baseline(self, entry: Entry, now: float) -> None:
        """First sight of an entry: ticks up to ``now`` are not its to run (HSETNX: the first scheduler wins)."""
        self._call("baseline", self.conn.hsetnx, self.keys.queue(entry.queue).cron_last, entry.id, to_ms(now))

    # -- heartbeats -------------------------------------------------------------------------------------------

    def write_scheduler(self, info: dict[str, Any], entries: Iterable[Entry], ttl: float) -> None:
        """Publish a scheduler and its entries, expiring unless the next heartbeat renews them."""
        ttl_ms = to_ms(ttl)
        now_ms = to_ms(self.broker.clock.now())
        doc = {**info, "entries": [e.to_doc() for e in entries]}
        pipe = self.conn.pipeline(transaction=True)
        pipe.set(self.keys.scheduler(info["id"]), json.dumps(doc), px=ttl_ms)
        pipe.zadd(self.keys.schedulers, {info["id"]: now_ms + ttl_ms})
        pipe.zremrangebyscore(self.keys.schedulers, "-inf", now_ms - 3600_000)  # crashed long ago
        self._call("write_scheduler", pipe.execute)

    def clear_scheduler(self, scheduler_id: str) -> None:
        pipe = self.conn.pipeline(transaction=True)
        pipe.delete(self.keys.scheduler(scheduler_id))
        pipe.zrem(self.keys.schedulers, scheduler_id)
        self._call("clear_scheduler", pipe.execute)

    def _scheduler_docs(self) -> list[dict[str, Any]]:
        now_ms = to_ms(self.broker.clock.now())
        ids = self._call("schedulers", self.conn.zrangebyscore, self.keys.schedulers, now_ms, "+inf")
        if not ids:
            return []
        raws = self._call("schedulers", self.conn.mget, [self.keys.scheduler(i.decode()) for i in ids])
        docs = []
        for raw in raws:
            try:
                if raw is not None:
                    docs.append(json.loads(raw))
            except ValueError as exc:
                log.warning("skipping unreadable scheduler record: %s", exc)
        return docs

    def schedulers(self) -> list[SchedulerInfo]:
        """Schedulers whose heartbeat is current, oldest first."""
        out = [
            SchedulerInfo(
                str(d.get("id", "")),
                str(d.get("host", "")),
                int(d.get("pid", 0)),
                from_ms(d.get("started")),
                [str(e.get("id", "")) for e in d.get("entries", [])],
            )
            for d in self._scheduler_docs()
        ]
        return sorted(out, key=lambda s: (s.started_at.timestamp() if s.started_at else 0.0, s.id))

    # -- admin-defined entries --------------------------------------------------------------------------------

    def write_config(self, entries: Iterable[Entry]) -> int:
        """Replace the admin's entries with ``entries`` in one transaction; returns the new version."""
        mapping: dict[Any, Any] = {e.id: json.dumps(e.to_doc()) for e in entries}
        pipe = self.conn.pipeline(transaction=True)
        pipe.delete(self.keys.config_periodic)
        if mapping:
            pipe.hset(self.keys.config_periodic, mapping=mapping)
        pipe.incr(self.keys.config_periodic_version)
        return int(self._call("write_config", pipe.execute)[-1])

    def config_version(self) -> int:
        return int(self._call("config_version", self.conn.get, self.keys.config_periodic_version) or 0)

    def read_config(self) -> tuple[list[Entry], int]:
        """The admin's entries and their version, read together. An entry this version cannot read is skipped
        with a warning, so one bad entry never stops the others."""
        pipe = self.conn.pipeline(transaction=True)
        pipe.hgetall(self.keys.config_periodic)
        pipe.get(self.keys.config_periodic_version)
        raw, version = self._call("read_config", pipe.execute)
        return _entries(raw.values(), "admin entry"), int(version or 0)

    # -- what the console and CLI show ------------------------------------------------------------------------

    def entries(self) -> list[EntryInfo]:
        """Every entry a live scheduler runs, and every entry defined in the admin (running or not), with its
        next and previous run."""
        found: dict[str, Entry] = {}
        runners: dict[str, list[str]] = {}
        for doc in self._scheduler_docs():
            for entry in _entries([json.dumps(e) for e in doc.get("entries", [])], "scheduler entry"):
                found.setdefault(entry.id, entry)
                runners.setdefault(entry.id, []).append(str(doc.get("id", "")))
        for entry in self.read_config()[0]:
            found.setdefault(entry.id, entry)
        ordered = sorted(found.values(), key=lambda e: (e.queue, e.type, e.spec, e.id))
        pipe = self.conn.pipeline(transaction=False)
        for entry in ordered:
            q = self.keys.queue(entry.queue)
            pipe.hget(q.cron_last, entry.id)
            pipe.zrevrange(q.cron_history(entry.id), 0, 0)
        replies = self._call("entries", pipe.execute) if ordered else []
        now = self.broker.clock.now()
        out = []
        for n, entry in enumerate(ordered):
            last, newest = replies[2 * n], replies[2 * n + 1]
            out.append(
                EntryInfo(
                    entry,
                    sorted(runners.get(entry.id, [])),
                    from_ms(_ms(entry.schedule.next_after(now))),
                    _record(newest[0]) if newest else None,
                    from_ms(int(last) if last else None),
                )
            )
        return out

    def entry(self, entry_id: str) -> EntryInfo:
        for info in self.entries():
            if info.id == entry_id:
                return info
        raise EntryNotFoundError(
            f"no periodic entry {entry_id!r} (no running scheduler has it and the admin defines none with this id)",
            op="scheduler.entry",
        )

    def history(self, entry_id: str, limit: int = 100) -> list[EnqueueRecord]:
        """The entry's latest enqueues, newest first. Raises EntryNotFoundError for an unknown entry."""
        return self.history_of(self.entry(entry_id).entry, limit)

    def history_of(self, entry: Entry, limit: int = 100) -> list[EnqueueRecord]:
        raws = self._call(
            "history", self.conn.zrevrange, self.keys.queue(entry.queue).cron_history(entry.id), 0, max(0, limit - 1)
        )
        return [_record(raw) for raw in raws]


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else to_ms(seconds)


def _entries(raws: Iterable[bytes | str], what: str) -> list[Entry]:
    out = []
    for raw in raws:
        try:
            out.append(Entry.from_doc(json.loads(raw)))
        except (ValidationError, ValueError, KeyError, TypeError) as exc:
            log.warning("skipping unreadable %s: %s", what, exc)
    return out
