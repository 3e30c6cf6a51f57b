"""asynq's periodic tasks as the console's cron page and ``tasks cron ls | history`` read them: the entries each
live Go ``Scheduler`` publishes (``asynq:schedulers:{<host>:<pid>:<uuid>}``, indexed in ``asynq:schedulers``) and
each entry's enqueue history (``asynq:scheduler_history:<entry id>``, capped by asynq at 1,000), in the shapes of
``SchedulerStore`` (``SchedulerInfo``, ``EntryInfo``, ``EnqueueRecord``).

An entry keeps asynq's id. Its spec, type, payload, queue and the options that have a taskq equivalent (max retry,
timeout, retention, unique) are shown as taskq's; its next and previous run are the ones the Go scheduler wrote.
asynq records only when each run was enqueued and the task's id: a run's outcome reads "enqueued", and its tick is
its enqueue time. asynq has no entries defined in an admin, no pause, and no run on demand: those are refused.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..periodic import Entry, make_entry
from ..sans_io import command
from ..scheduler_store import EnqueueRecord, EntryInfo, SchedulerInfo, SchedulerStore
from .inspection.reads_core import refusing
from .keys import ALL_SCHEDULERS, scheduler_history_key
from .wire import WireEnqueueEvent, WireError, WireSchedulerEntry

log = logging.getLogger("taskq.queues.engine.asynq.scheduler")

#: Go's ``time.Duration`` text (``1h0m0s``, ``1m30s``, ``500ms``), a number and a unit at a time.
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: An option as Go's ``Option.String()`` writes it: ``MaxRetry(2)``, ``Queue("reports")``, ``Timeout(30s)``.
_OPTION = re.compile(r"^(\w+)\((.*)\)$")
#: asynq's options with a taskq equivalent, and how their value reads.
_DURATIONS = {"Timeout": "timeout", "Retention": "retention", "Unique": "unique"}


def go_duration(text: str) -> float | None:
    """Seconds of a Go duration's text; None when it is not one."""
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.lstrip("-"):
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def entry_options(written: list[str]) -> tuple[str, dict[str, Any]]:
    """The queue and taskq's enqueue options of an asynq entry's option strings (the others have no place)."""
    queue = "default"
    options: dict[str, Any] = {}
    for text in written:
        found = _OPTION.match(text)
        if found is None:
            continue
        name, value = found.groups()
        if name == "Queue":
            queue = value.strip('"')
        elif name == "MaxRetry" and value.isdigit():
            options["max_retry"] = int(value)
        elif name in _DURATIONS and (seconds := go_duration(value)) is not None and seconds > 0:
            options[_DURATIONS[name]] = seconds
    return queue, options


def scheduler_info(key: str, entries: list[WireSchedulerEntry]) -> SchedulerInfo:
    """A Go scheduler from its entries' key: its id is ``<host>:<pid>:<uuid>``; asynq records no start time."""
    scheduler_id = key.partition("{")[2].rstrip("}")
    host, _, rest = scheduler_id.rpartition(":")[0].rpartition(":")
    return SchedulerInfo(scheduler_id, host, int(rest) if rest.isdigit() else 0, None, [e.id for e in entries])


def as_entry(written: WireSchedulerEntry) -> Entry | None:
    """taskq's Entry of an asynq entry, under asynq's id; None (with a warning) when its spec is not one taskq
    reads (a spec taskq cannot read cannot give its upcoming runs)."""
    spec, tz = written.spec, "UTC"
    if spec.startswith(("CRON_TZ=", "TZ=")):
        zone, _, spec = spec.partition(" ")
        tz = zone.partition("=")[2]
    queue, options = entry_options(written.enqueue_options)
    try:
        entry = make_entry(spec, written.task_type, written.task_payload, queue=queue, tz=tz, options=options)
    except ValidationError as exc:
        log.warning("asynq scheduler entry %s is not shown: %s", written.id, exc)
        return None
    return dataclasses.replace(entry, id=written.id, source="asynq")


def _when(stamp: Any) -> datetime | None:
    return stamp.datetime() if stamp is not None else None


def record(event: WireEnqueueEvent) -> EnqueueRecord:
    """A run as asynq records it: the task enqueued and when (its tick too: asynq keeps no other)."""
    enqueued = _when(event.enqueue_time)
    return EnqueueRecord(enqueued, event.task_id, enqueued, "enqueued")


class AsynqSchedulerStore(SchedulerStore):
    """What the console and the CLI read of asynq's schedulers, in ``SchedulerStore``'s shapes."""

    area = "asynq_scheduler"

    def _published(self) -> list[tuple[str, list[WireSchedulerEntry]]]:
        """Each live scheduler's key and the entries it published (undecodable ones skipped, as asynq skips them)."""
        now = int(self.broker.clock.now())
        keys = [k.decode() for k in self._send("schedulers", "zrangebyscore", ALL_SCHEDULERS, now, "+inf")]
        lists = self._batch("schedulers", [command("lrange", key, 0, -1) for key in keys], atomic=False)
        out = []
        for key, raws in zip(keys, lists, strict=True):
            entries = []
            for raw in raws:
                try:
                    entries.append(WireSchedulerEntry.decode(raw))
                except WireError as exc:
                    log.warning("skipping an undecodable asynq scheduler entry: %s", exc)
            out.append((key, entries))
        return out

    def schedulers(self) -> list[SchedulerInfo]:
        """The Go schedulers whose heartbeat is current, by id."""
        return sorted((scheduler_info(key, entries) for key, entries in self._published()), key=lambda s: s.id)

    def read_config(self) -> tuple[list[Entry], int]:
        """None: asynq has no entries defined in an admin."""
        return [], 0

    def config_version(self) -> int:
        return 0

    def entries(self) -> list[EntryInfo]:
        """Every entry a live Go scheduler runs, with the next and previous run it wrote and its latest run."""
        found: dict[str, tuple[Entry, WireSchedulerEntry]] = {}
        runners: dict[str, list[str]] = {}
        for key, written in self._published():
            for item in written:
                entry = as_entry(item)
                if entry is not None:
                    found.setdefault(item.id, (entry, item))
                    runners.setdefault(item.id, []).append(scheduler_info(key, []).id)
        ordered = sorted(found.values(), key=lambda pair: (pair[0].queue, pair[0].type, pair[0].spec, pair[0].id))
        history = [command("zrevrange", scheduler_history_key(e.id), 0, 0) for e, _ in ordered]
        newest = self._batch("entries", history, atomic=False)
        out = []
        for (entry, item), latest in zip(ordered, newest, strict=True):
            next_run = _when(item.next_enqueue_time)
            previous = _records(latest)
            out.append(
                EntryInfo(
                    entry,
                    sorted(runners[entry.id]),
                    next_run,
                    previous[0] if previous else None,
                    _when(item.prev_enqueue_time),
                    None,
                    [next_run] if next_run else [],
                )
            )
        return out

    def history_of(self, entry: Entry, limit: int = 100) -> list[EnqueueRecord]:
        """The entry's latest runs, newest first (``asynq:scheduler_history:<id>``, scored by enqueue time)."""
        raws = self._send("history", "zrevrange", scheduler_history_key(entry.id), 0, max(0, limit - 1))
        return _records(raws)


def _records(raws: list[bytes]) -> list[EnqueueRecord]:
    """The runs of a history read (undecodable events skipped, as they cannot be shown)."""
    out = []
    for raw in raws:
        try:
            out.append(record(WireEnqueueEvent.decode(raw)))
        except WireError as exc:
            log.warning("skipping an undecodable asynq enqueue event: %s", exc)
    return out


refusing(
    AsynqSchedulerStore,
    [
        "fire_call",
        "fire",
        "run_now",
        "pause",
        "resume",
        "last_ticks",
        "baseline",
        "write_scheduler",
        "clear_scheduler",
        "write_config",
    ],
    "taskq scheduler records (asynq's entries are run, paused and defined by its Go scheduler)",
    area="asynq_scheduler",
)
