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

from . import producer, producer_tracing, tracing
from .broker import Broker, BrokerStore
from .clock import from_ms, to_ms
from .errors import ValidationError
from .periodic import AmbiguousEntryError, Entry, EntryNotFoundError
from .policies import PolicyCache
from .quoting import shown
from .sans_io import command
from .scripts import script
from .transitions import Call

log = logging.getLogger("taskq.queues.engine.scheduler")

HISTORY_CAP = 1000  # runs kept per entry, as asynq keeps
UPCOMING = 5  # run times ``EntryInfo.upcoming`` lists by default
STATUSES = {"OK": "enqueued", "NEW": "enqueued", "DUPLICATE": "duplicate", "EXISTS": "exists", "PAUSED": "paused"}


#: A run's outcome once it ended (``cron_run_ended`` in ``lua/_lib.lua`` records them); before that "enqueued", or
#: "duplicate" when a unique lock of an earlier run was held and nothing was enqueued. "failed" is an attempt that
#: failed and will be retried: it becomes one of the final outcomes later.
FINAL_OUTCOMES = ("completed", "archived", "deleted", "expired")


@dataclass
class EnqueueRecord:
    """One run of an entry: the tick it was due (or, run by hand, when it was asked for), the task it enqueued,
    and what became of it: ``outcome`` (enqueued, duplicate, failed, or one of FINAL_OUTCOMES), when its latest
    attempt ended and how long it ran (seconds), and how many attempts ended."""

    tick: datetime | None
    task_id: str
    enqueued_at: datetime | None
    outcome: str
    ended_at: datetime | None = None
    ran: float | None = None
    attempts: int = 0
    manual: bool = False

    @property
    def final(self) -> bool:
        return self.outcome in FINAL_OUTCOMES


@dataclass
class Pause:
    """Who paused an entry, and when."""

    at: datetime | None
    by: str


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
    paused: Pause | None = None
    #: The next UPCOMING run times, ``next_run`` first (a paused entry's too: when it would run).
    upcoming: list[datetime] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.entry.id


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _record(raw: bytes) -> EnqueueRecord:
    doc = json.loads(raw)
    ran_ms = _number(doc.get("ran_ms"))
    return EnqueueRecord(
        from_ms(doc.get("tick")),
        str(doc.get("task_id", "")),
        from_ms(doc.get("at")),
        str(doc.get("outcome", "enqueued")),
        from_ms(doc.get("ended")),
        None if ran_ms is None else ran_ms / 1000,
        int(_number(doc.get("attempts")) or 0),
        bool(doc.get("manual", False)),
    )


def _record_json(tick_ms: int, task_id: str, now_ms: int, outcome: str, manual: bool = False) -> str:
    doc: dict[str, Any] = {"tick": tick_ms, "task_id": task_id, "at": now_ms, "outcome": outcome}
    if manual:
        doc["manual"] = True
    return json.dumps(doc, separators=(",", ":"))


def _pause(raw: bytes | None) -> Pause | None:
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    return Pause(from_ms(doc.get("at")), str(doc.get("by", "")))


class SchedulerStore(BrokerStore):
    area = "scheduler"

    def __init__(self, broker: Broker, policies: PolicyCache | None = None, history_cap: int = HISTORY_CAP) -> None:
        super().__init__(broker)
        self.policies = policies
        self.history_cap = history_cap

    # -- firing ticks -----------------------------------------------------------------------------------------

    def fire_call(
        self,
        entry: Entry,
        tick_ms: int,
        actor: str,
        manual: bool = False,
        context_headers: dict[str, str] | None = None,
    ) -> Call:
        """The script call that enqueues ``entry``'s task for ``tick_ms`` (``manual``: an operator's run now, with
        ``tick_ms`` now); validation (and the unique and retention policies of the admin) as ``enqueue`` applies
        them. ``context_headers``: the trace context the task carries (see ``producer_tracing``)."""
        now = self.broker.clock.now()
        policies = self.policies.get(self.broker, "scheduler.fire") if self.policies is not None else None
        task_id = entry.manual_task_id(tick_ms) if manual else entry.task_id(tick_ms)
        options = {**entry.options, "queue": entry.queue, "task_id": task_id}
        placement = producer.plan(
            self.keys,
            now,
            entry.type,
            entry.payload,
            producer_tracing.carrying(options, context_headers) if context_headers else options,
            "scheduler.fire",
            policies=policies,
        )
        m = placement.message
        q = self.keys.queue(entry.queue)
        now_ms = to_ms(now)
        keys = [q.type_counts, q.events, q.pending, q.scheduled, q.cron_last, q.cron_history(entry.id), q.cron_paused]
        args = [
            q.task_prefix,
            now_ms,
            self.broker.transitions.limits.event_maxlen,
            actor,
            entry.id,
            tick_ms,
            self.history_cap,
            _record_json(tick_ms, task_id, now_ms, "enqueued", manual),
            _record_json(tick_ms, task_id, now_ms, "duplicate", manual),
            m.id,
            m.type,
            placement.encoded_options or m.encode_options(),
            m.payload,
            placement.process_at_ms,
            placement.unique_key,
            placement.unique_ttl_ms,
            "manual" if manual else "tick",
        ]
        return Call("fire_tick", script("fire_tick"), keys, args, lambda reply: reply.decode())

    def _fired(self, call: Call, entry: Entry) -> str:
        status = self.broker.run(call)
        if status == "NEW":
            self._send("fire", "sadd", self.keys.queues, entry.queue)
        return STATUSES[status]

    def fire(self, entry: Entry, tick: float, actor: str = "scheduler") -> str:
        """Enqueue the entry's task for ``tick`` (epoch seconds). Returns "enqueued", "duplicate" (a unique lock
        of an earlier run was held), "exists" or "paused" (the tick is handled without a task); raises
        TaskIdConflictError when this tick (or a later one) was handled already, by this scheduler or another.

        Where an SDK records (OpenTelemetry, the ``otel`` extra), each fire is a root ``send`` span (no request
        caused it) whose context the task carries."""
        if not producer_tracing.sdk_configured():
            return self._fired(self.fire_call(entry, to_ms(tick), actor), entry)
        return self._traced_fire(entry, to_ms(tick), actor, root=True)

    def _traced_fire(self, entry: Entry, tick_ms: int, actor: str, root: bool = False, manual: bool = False) -> str:
        with producer_tracing.Sending(entry.queue, entry.type, root=root) as span:
            span.set_attribute("taskq.periodic.entry", entry.id)
            call = self.fire_call(entry, tick_ms, actor, manual, producer_tracing.carried())
            status = self._fired(call, entry)
            span.set_attribute(
                "messaging.message.id", entry.manual_task_id(tick_ms) if manual else entry.task_id(tick_ms)
            )
            span.set_attribute("taskq.periodic.status", status)
            return status

    def run_now(self, entry: Entry, actor: str) -> tuple[str, str]:
        """Enqueue a run of ``entry`` now, outside its schedule (paused or not); its ticks are left alone. Returns
        the task id and "enqueued", "duplicate" (a unique lock of an earlier run is held: nothing enqueued) or
        "exists" (a run asked for in the same millisecond). The run goes into the entry's history, marked manual."""
        now_ms = to_ms(self.broker.clock.now())
        if tracing.recording():  # an operator's request: the run's send span is its child
            status = self._traced_fire(entry, now_ms, actor, manual=True)
        else:
            status = self._fired(self.fire_call(entry, now_ms, actor, manual=True), entry)
        return entry.manual_task_id(now_ms), status

    def pause(self, entry: Entry, actor: str) -> None:
        """Pause ``entry``: from now on every scheduler marks its ticks handled without enqueuing. Raises
        FailedPreconditionError when it is paused already."""
        record = json.dumps({"at": to_ms(self.broker.clock.now()), "by": actor}, separators=(",", ":"))
        q = self.keys.queue(entry.queue)
        self.broker.run(Call("scheduler.pause", script("pause_entry"), [q.cron_paused], [entry.id, record]))

    def resume(self, entry: Entry) -> None:
        """Resume a paused ``entry`` from its next tick on. Raises FailedPreconditionError when it is not paused."""
        q = self.keys.queue(entry.queue)
        self.broker.run(Call("scheduler.resume", script("resume_entry"), [q.cron_paused], [entry.id]))

    def last_ticks(self, entries: Iterable[Entry]) -> dict[str, float | None]:
        """Each entry's last handled tick (epoch seconds), None for an entry no scheduler has seen yet."""
        entries = list(entries)
        replies = self._batch(
            "last_ticks",
            [command("hget", self.keys.queue(entry.queue).cron_last, entry.id) for entry in entries],
            atomic=False,
        )
        return {e.id: (None if raw is None else int(raw) / 1000) for e, raw in zip(entries, replies, strict=True)}

    def baseline(self, entry: Entry, now: float) -> None:
        """First sight of an entry: ticks up to ``now`` are not its to run (HSETNX: the first scheduler wins)."""
        self._send("baseline", "hsetnx", self.keys.queue(entry.queue).cron_last, entry.id, to_ms(now))

    # -- heartbeats -------------------------------------------------------------------------------------------

    def write_scheduler(self, info: dict[str, Any], entries: Iterable[Entry], ttl: float) -> None:
        """Publish a scheduler and its entries, expiring unless the next heartbeat renews them."""
        ttl_ms = to_ms(ttl)
        now_ms = to_ms(self.broker.clock.now())
        doc = {**info, "entries": [e.to_doc() for e in entries]}
        self._batch(
            "write_scheduler",
            [
                command("set", self.keys.scheduler(info["id"]), json.dumps(doc), px=ttl_ms),
                command("zadd", self.keys.schedulers, {info["id"]: now_ms + ttl_ms}),
                command("zremrangebyscore", self.keys.schedulers, "-inf", now_ms - 3600_000),  # crashed long ago
            ],
        )

    def clear_scheduler(self, scheduler_id: str) -> None:
        self._batch(
            "clear_scheduler",
            [command("delete", self.keys.scheduler(scheduler_id)), command("zrem", self.keys.schedulers, scheduler_id)],
        )

    def _scheduler_docs(self) -> list[dict[str, Any]]:
        now_ms = to_ms(self.broker.clock.now())
        ids = self._send("schedulers", "zrangebyscore", self.keys.schedulers, now_ms, "+inf")
        if not ids:
            return []
        raws = self._send("schedulers", "mget", [self.keys.scheduler(i.decode()) for i in ids])
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
        commands = [command("delete", self.keys.config_periodic)]
        if mapping:
            commands.append(command("hset", self.keys.config_periodic, mapping=mapping))
        commands.append(command("incr", self.keys.config_periodic_version))
        return int(self._batch("write_config", commands)[-1])

    def config_version(self) -> int:
        return int(self._send("config_version", "get", self.keys.config_periodic_version) or 0)

    def read_config(self) -> tuple[list[Entry], int]:
        """The admin's entries and their version, read together. An entry this version cannot read is skipped
        with a warning, so one bad entry never stops the others."""
        raw, version = self._batch(
            "read_config",
            [command("hgetall", self.keys.config_periodic), command("get", self.keys.config_periodic_version)],
        )
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
        reads = []
        for entry in ordered:
            q = self.keys.queue(entry.queue)
            reads += [
                command("hget", q.cron_last, entry.id),
                command("zrevrange", q.cron_history(entry.id), 0, 0),
                command("hget", q.cron_paused, entry.id),
            ]
        replies = self._batch("entries", reads, atomic=False)
        now = self.broker.clock.now()
        out = []
        for n, entry in enumerate(ordered):
            last, newest, paused = replies[3 * n : 3 * n + 3]
            upcoming = [when for when in (from_ms(to_ms(t)) for t in entry.schedule.ticks(now, UPCOMING)) if when]
            out.append(
                EntryInfo(
                    entry,
                    sorted(runners.get(entry.id, [])),
                    upcoming[0] if upcoming else None,
                    _record(newest[0]) if newest else None,
                    from_ms(int(last) if last else None),
                    _pause(paused),
                    upcoming,
                )
            )
        return out

    def entry(self, entry_id: str) -> EntryInfo:
        """The entry with this id. Raises EntryNotFoundError."""
        for info in self.entries():
            if info.id == entry_id:
                return info
        raise _not_found(entry_id, "id")

    def resolve(self, ref: str) -> EntryInfo:
        """The entry named by ``ref``: its id, or else its name when exactly one entry has that name. Raises
        EntryNotFoundError, or AmbiguousEntryError (naming the ids) when several entries share the name."""
        infos = self.entries()
        for info in infos:
            if info.id == ref:
                return info
        named = [info for info in infos if ref and info.entry.name == ref]
        if len(named) > 1:
            ids = ", ".join(info.id for info in named)
            raise AmbiguousEntryError(
                f"{len(named)} periodic entries are named {shown(ref)}; give one of their ids: {ids}",
                op="scheduler.resolve",
            )
        if not named:
            raise _not_found(ref, "id or name")
        return named[0]

    def history(self, entry_id: str, limit: int = 100) -> list[EnqueueRecord]:
        """The entry's latest runs, newest first. Raises EntryNotFoundError for an unknown entry."""
        return self.history_of(self.entry(entry_id).entry, limit)

    def history_of(self, entry: Entry, limit: int = 100) -> list[EnqueueRecord]:
        raws = self._send(
            "history", "zrevrange", self.keys.queue(entry.queue).cron_history(entry.id), 0, max(0, limit - 1)
        )
        return [_record(raw) for raw in raws]


def _not_found(ref: str, what: str) -> EntryNotFoundError:
    return EntryNotFoundError(
        f"no periodic entry {shown(ref)} (no running scheduler has it and the admin defines none with this {what})",
        op="scheduler.entry",
    )


def _entries(raws: Iterable[bytes | str], what: str) -> list[Entry]:
    out = []
    for raw in raws:
        try:
            out.append(Entry.from_doc(json.loads(raw)))
        except (ValidationError, ValueError, KeyError, TypeError) as exc:
            log.warning("skipping unreadable %s: %s", what, exc)
    return out
