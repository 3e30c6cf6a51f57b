"""The record a deleted task leaves when an operator had acted on it, so its page stays readable.

An operator's edit or run of a task (``edit_task.lua``, ``run_task.lua``) puts the task in the audit log, and marks
it (``mark_kept`` in ``lua/_lib.lua``): its hash gains a trail of the failure it carried then and the action. A task
no one acted on carries nothing more, so the bytes of a pending task do not change. When a marked task is deleted
on success (``done.lua``), or by the janitor once its retention ends (``delete_expired.lua``), it leaves one JSON
string, ``QueueKeys.task_record``, expiring ``TASKS_TASK_RECORD_SECONDS`` later (``leave_record``). The task's
events may be gone from its queue's capped stream long before that in a busy queue; the record is not.

What it holds is what the hash knew: the failure it carried each time an operator acted on it, a failure since the
last action, and how it ended. Earlier automatic retries, between two actions, left no more than the latest error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .clock import from_ms
from .timeline import OUTCOMES, AttemptRecord, event_window


@dataclass(frozen=True)
class TrailEntry:
    """One moment of a record's trail: a failure (``kind`` "failed") or an operator's action ("edit", "run")."""

    kind: str
    at: datetime | None
    error: str = ""  # a failure's error
    ran_ms: int | None = None  # how long a failed attempt ran, when known
    to: str = ""  # where a failure sent the task: retry or archived
    by: str = ""  # who acted (the audit log's actor: "console:otto")


@dataclass(frozen=True)
class RecordEvent:
    """A moment of the record read as a transition: the attributes the task page's history reads of a
    ``TaskEvent``, from the record instead of the stream."""

    id: str
    type: str
    from_state: str
    to_state: str
    at: datetime | None
    worker: str = ""
    error: str = ""
    lease: str = ""
    stream_id: str = ""
    started: datetime | None = None


@dataclass(frozen=True)
class TaskRecord:
    """A deleted task's record. ``outcome`` is "done" (deleted on success, no retention) or "expired" (deleted by
    the janitor once the retention of its completion ended); ``at`` is when it was deleted, by ``by`` (the worker
    or the janitor); ``expires_at``, when the record goes."""

    id: str
    queue: str
    type: str
    outcome: str
    at: datetime | None
    by: str = ""
    created: datetime | None = None
    started: datetime | None = None  # the last attempt's handler start (outcome done), when the worker said
    ran_ms: int | None = None  # how long the last attempt ran, when known
    completed_at: datetime | None = None  # outcome expired: when it completed
    retried: int = 0
    trail: list[TrailEntry] = field(default_factory=list)
    expires_at: datetime | None = None

    @classmethod
    def parse(cls, queue: str, task_id: str, raw: bytes, ttl_ms: int, now: datetime) -> TaskRecord | None:
        """The record stored as ``raw`` (``leave_record``'s JSON), ``ttl_ms`` from its end at ``now``; None when it
        cannot be read (a record is a courtesy: a page falls back to the task's events)."""
        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        trail = doc.get("trail")
        return cls(
            id=task_id,
            queue=queue,
            type=str(doc.get("type") or ""),
            outcome=str(doc.get("outcome") or ""),
            at=_when(doc.get("at")),
            by=str(doc.get("by") or ""),
            created=_when(doc.get("created")),
            started=_when(doc.get("started")),
            ran_ms=_number(doc.get("ran_ms")),
            completed_at=_when(doc.get("completed_at")),
            retried=_number(doc.get("retried")) or 0,
            trail=[_entry(e) for e in trail if isinstance(e, dict)] if isinstance(trail, list) else [],
            expires_at=now + timedelta(milliseconds=ttl_ms) if ttl_ms > 0 else None,
        )

    def window(self) -> tuple[int, int] | None:
        """Where the task's events can be in its queue's stream (see ``timeline.event_window``)."""
        return event_window(self.created, self.at)

    def failures(self) -> list[TrailEntry]:
        return [entry for entry in self.trail if entry.kind == "failed"]

    def attempts(self) -> list[AttemptRecord]:
        """The attempts the record knows, as the task page lists them: each failure it kept, then the success."""
        attempts = [
            AttemptRecord(n, "", "", None, _before(f.at, f.ran_ms), f.at, OUTCOMES.get(f.to, f.to or "failed"), f.error)
            for n, f in enumerate(self.failures(), 1)
        ]
        ended = self.at if self.outcome == "done" else self.completed_at
        started = self.started if self.outcome == "done" else _before(ended, self.ran_ms)
        worker = self.by if self.outcome == "done" else ""
        attempts.append(AttemptRecord(len(attempts) + 1, worker, "", None, started, ended, "succeeded", "", worker))
        return attempts

    def events(self) -> list[RecordEvent]:
        """The record's moments as the task page's history lists transitions, oldest first: each failure, each
        operator action (the task to pending, by its actor), then its end."""
        events: list[RecordEvent] = []
        state = ""  # where the task was before an action: where the failure before it sent it, when kept
        for entry in self.trail:
            if entry.kind == "failed":
                state = entry.to
                events.append(self._event("active", entry.to, entry.at, error=entry.error))
            else:
                events.append(
                    self._event(state, "pending", entry.at, worker=entry.by, error=f"{entry.kind} (operator)")
                )
                state = "pending"
        if self.outcome == "done":
            events.append(self._event("active", "done", self.at, worker=self.by, started=self.started))
        else:
            events.append(self._event("active", "completed", self.completed_at))
            events.append(self._event("completed", "deleted", self.at, worker=self.by, error="retention ended"))
        return events

    def _event(self, from_state: str, to_state: str, at: datetime | None, **more: Any) -> RecordEvent:
        return RecordEvent(self.id, self.type, from_state, to_state, at, **more)


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _when(value: Any) -> datetime | None:
    ms = _number(value)
    return from_ms(ms) if ms else None


def _before(at: datetime | None, ran_ms: int | None) -> datetime | None:
    return None if at is None or ran_ms is None else at - timedelta(milliseconds=ran_ms)


def _entry(doc: dict[str, Any]) -> TrailEntry:
    return TrailEntry(
        kind=str(doc.get("kind") or ""),
        at=_when(doc.get("at")),
        error=str(doc.get("error") or ""),
        ran_ms=_number(doc.get("ran_ms")),
        to=str(doc.get("to") or ""),
        by=str(doc.get("by") or ""),
    )
