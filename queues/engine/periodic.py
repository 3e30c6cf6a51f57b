"""Periodic task entries: what to enqueue, where, and when. Defined in code with ``schedule(...)`` or in the
Django admin (mirrored into Redis); run by ``manage.py taskscheduler``.

    from taskq.queues.engine import schedule

    schedule("*/5 * * * *", "report:refresh", {"scope": "all"}, queue="low")
    schedule("0 7 * * mon-fri", "digest:send", tz="Europe/Paris", missed="run_once", max_retry=3)
    schedule("@every 30s", "health:ping")

An entry's id is a digest of its schedule, time zone, type, payload, queue and options, so every scheduler
process (and the admin) computes the same id for the same entry, and the task of each tick has the id
``cron:<entry id>:<tick ms>``. Nothing here does I/O.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import validation as check
from .cron import Schedule, parse
from .errors import EngineError, ValidationError
from .producer import template
from .quoting import shown
from .records import picked

#: What a scheduler does with ticks that passed while no scheduler ran (or that it reached too late):
#: ``skip`` drops them (only a tick within the grace period still runs); ``run_once`` runs the latest of them once.
MISSED_POLICIES = ("skip", "run_once")
#: Enqueue options a periodic entry may carry; ids and absolute times are the scheduler's to set.
ENTRY_OPTIONS = frozenset({"max_retry", "timeout", "retention", "unique", "headers"})
OP = "periodic.entry"


class EntryNotFoundError(EngineError, LookupError):
    """No periodic entry with this id (or name) is known (to a running scheduler or the admin's definitions)."""

    code = "not_found"


class AmbiguousEntryError(ValidationError):
    """Several periodic entries have the name given: name one by its id."""


def check_options(options: Mapping[str, Any], op: str = OP) -> dict[str, Any]:
    """The enqueue options of an entry, validated as ``enqueue`` would. Raises ValidationError."""
    if not isinstance(options, Mapping):
        raise ValidationError(f"options must be a mapping of enqueue options, got {shown(options)}", op=op)
    unknown = set(options) - ENTRY_OPTIONS
    if unknown:
        raise ValidationError(
            f"option(s) {', '.join(sorted(map(str, unknown)))} cannot be used on a periodic task; "
            f"allowed: {', '.join(sorted(ENTRY_OPTIONS))}",
            op=op,
        )
    template(0.0, options, op)
    return dict(options)


def entry_id(spec: str, tz: str, task_type: str, payload: bytes, queue: str, options: Mapping[str, Any]) -> str:
    """The deterministic id of an entry: the same definition gets the same id in every process."""
    canonical = json.dumps(
        [spec, tz, task_type, base64.b64encode(payload).decode(), queue, dict(options)],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


@dataclass
class Entry:
    """One validated periodic entry. Build it with ``make_entry`` (or ``schedule``), which checks every field."""

    spec: str
    type: str
    payload: bytes
    queue: str
    tz: str
    options: dict[str, Any]
    missed: str
    schedule: Schedule = field(repr=False, compare=False)
    id: str = ""
    source: str = "code"  # "code" or "admin"
    name: str = ""

    def task_id(self, tick_ms: int) -> str:
        return f"cron:{self.id}:{tick_ms}"

    def manual_task_id(self, at_ms: int) -> str:
        """The id of a run an operator asked for at ``at_ms``: never the id of a tick, so it cannot take a tick's
        place (``lua/_lib.lua`` reads both forms as ``cron:<entry id>:<ms>``)."""
        return f"cron:{self.id}:{at_ms}:manual"

    def to_doc(self) -> dict[str, Any]:
        """JSON-ready form, as schedulers publish it and the admin mirrors it."""
        return {
            **picked(self, "id spec tz type"),
            "payload": base64.b64encode(self.payload).decode(),
            **picked(self, "queue options missed source name"),
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Entry:
        """Parse ``to_doc``'s form; raises ValidationError (or ValueError/KeyError) on a malformed one."""
        return make_entry(
            doc["spec"],
            doc["type"],
            base64.b64decode(doc["payload"]),
            queue=doc["queue"],
            tz=doc.get("tz", "UTC"),
            missed=doc.get("missed", "skip"),
            options=doc.get("options") or {},
            source=doc.get("source", "code"),
            name=doc.get("name", ""),
        )


def make_entry(
    spec: str,
    task_type: str,
    payload: Any = b"",
    *,
    queue: str = "default",
    tz: str = "UTC",
    missed: str = "skip",
    options: Mapping[str, Any] | None = None,
    source: str = "code",
    name: str = "",
) -> Entry:
    """Validate every field of an entry and compute its id. Raises ValidationError naming the field."""
    schedule = parse(spec, tz)
    spec = " ".join(spec.split())
    task_type = check.task_type(task_type, OP)
    queue = check.new_queue_name(queue, OP)
    data = check.payload(payload, OP)
    if missed not in MISSED_POLICIES:
        raise ValidationError(f"missed must be one of {', '.join(MISSED_POLICIES)}, got {shown(missed)}", op=OP)
    opts = check_options(options or {})
    return Entry(
        spec,
        task_type,
        data,
        queue,
        tz,
        opts,
        missed,
        schedule,
        entry_id(spec, tz, task_type, data, queue, opts),
        source,
        name,
    )


class ScheduleRegistry:
    """Entries defined in code, by id (defining the same entry twice keeps one). Thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def add(self, entry: Entry) -> Entry:
        with self._lock:
            self._entries.setdefault(entry.id, entry)
            return self._entries[entry.id]

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: The registry ``schedule`` adds to by default; ``taskscheduler`` runs it.
schedules = ScheduleRegistry()


#: The keywords ``schedule`` hands to ``make_entry`` as they are; every other keyword is an enqueue option.
ENTRY_KEYWORDS = ("queue", "tz", "missed", "name")


def schedule(
    spec: str, task_type: str, payload: Any = b"", *, registry: ScheduleRegistry = schedules, **keywords: Any
) -> Entry:
    """Register a periodic task: enqueue ``task_type`` with ``payload`` at every tick of ``spec`` (five-field cron in
    time zone ``tz``, default UTC; a macro such as ``@daily``; or ``@every 30s``) on ``queue`` (default
    ``default``). ``missed`` says what a scheduler does with ticks that passed while none ran: ``skip`` them (the
    default) or ``run_once``; ``name`` lets ``tasks cron`` find the entry by name. Every other keyword is an enqueue
    option (max_retry, timeout, retention, unique, headers). The defaults are ``make_entry``'s, so that the two
    cannot drift apart. Call it at module level in an app's ``tasks.py`` or a module given to ``taskscheduler
    --import``. Raises ValidationError."""
    fields = {key: keywords.pop(key) for key in ENTRY_KEYWORDS if key in keywords}
    return registry.add(make_entry(spec, task_type, payload, options=keywords, **fields))
