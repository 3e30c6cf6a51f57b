"""The task page's figures, read and rendered one way for a page load and for the live feed, so a live page
reads as a fresh load.

The page's live parts (its badges, fields, attempts and history) are partial templates. The view renders them
into the page; the live hub renders the same partials from the same reads and sends them to every open page of the
task, which swaps them in. So once activity stops a live page reads exactly as a fresh load: nothing is computed
in the browser, and no event is listed twice (the history is rendered whole from the stream, not appended to).

A task that is gone (deleted on success without retention, deleted by an operator, expired, aggregated) but
still has events in its queue's stream is rendered from those events, marked as gone (``GoneTask``), instead of
a 404: after "Edit and run", "Run" or "Retry" the operator sees what became of the task even once it is deleted.
Such a task also leaves a record (``queues/engine/task_records.py``) for ``TASKS_TASK_RECORD_SECONDS``: its page is
then rendered from the record, marked as the record of a deleted task, once the capped stream no longer holds the
task's events from its creation on (a busy queue trims them within a minute).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.template.loader import render_to_string

from taskq.queues import conf, key_format
from taskq.queues.engine import TaskNotFoundError, extras
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.error_groups import group_search
from taskq.queues.engine.inspector import TaskEvent
from taskq.queues.engine.timeline import attempts_of, event_window
from taskq.queues.redaction_access import mask_events, mask_task_text

from .trace_links import task_traces

#: The live sections of the task page: the element ``data-live-section=<name>`` and the partial that renders it.
SECTIONS = {
    "badges": "taskq/_task_badges.html",
    "fields": "taskq/_task_fields.html",
    "attempts": "taskq/_task_attempts.html",
    "history": "taskq/_task_history.html",
}

#: The states whose task an editor may change and run ("Edit and run…").
EDITABLE = ("retry", "archived")

#: What became of a task whose hash is gone, by the ``to`` of its last event: (state shown, what the page says).
GONE = {
    "done": ("completed", "completed and deleted (no retention)"),
    "deleted": ("deleted", "deleted"),
    "expired": ("expired", "expired before it ran, and dropped"),
    "aggregated": ("aggregated", "aggregated into another task"),
}


@dataclass
class GoneTask:
    """A task no longer stored, as its events tell it: what the templates read of a ``TaskInfo``, and ``outcome``.
    Its payload, result and options went with its hash; the page says so rather than guess them."""

    id: str
    queue: str
    type: str
    state: str
    outcome: str
    state_since: datetime | None
    last_error: str
    last_failed_at: datetime | None
    gone: bool = True
    record: Any = None  # the TaskRecord it left, when an operator had acted on it
    source: str = ""  # where its attempts and history were read, when not from the stream alone

    @classmethod
    def from_events(cls, queue: str, task_id: str, events: list[Any]) -> GoneTask:
        last = events[-1]
        state, outcome = GONE.get(last.to_state, ("gone", "no longer stored"))
        if last.to_state in ("deleted", "aggregated") and last.error:
            outcome = f"{outcome} ({last.error})"  # "deleted (deleted by console:otto)" names who
        failures = [e for e in events if e.from_state == "active" and e.error]
        return cls(
            id=task_id,
            queue=queue,
            type=last.type,
            state=state,
            outcome=outcome,
            state_since=last.at,
            last_error=failures[-1].error if failures else "",
            last_failed_at=failures[-1].at if failures else None,
        )

    @classmethod
    def from_record(cls, record: Any, events: list[Any]) -> GoneTask:
        """From the record the task left, its stream ``events`` rendered when they reach back to its creation (the
        fuller history), else the record's own."""
        outcome = RECORDED.get(record.outcome, "no longer stored")
        failures = record.failures()
        whole = bool(events) and not events[0].from_state
        return cls(
            id=record.id,
            queue=record.queue,
            type=record.type,
            state="completed",
            outcome=outcome,
            state_since=record.at,
            last_error=failures[-1].error if failures else "",
            last_failed_at=failures[-1].at if failures else None,
            record=record,
            source="" if whole else "the record it left (the queue's event stream no longer holds its start)",
        )


#: How a record reads by its outcome (``TaskRecord.outcome``).
RECORDED = {
    "done": "completed and deleted (no retention)",
    "expired": "completed, then deleted when its retention ended",
}


def read_task(insp: Any, queue: str, task_id: str) -> tuple[Any, list[Any] | None]:
    """The task, or a ``GoneTask`` with the events it was read from (else None: the page reads them itself): from
    the record it left when it has one, else from its events.

    Raises:
        TaskNotFoundError: no task of that id, no record of it, and no event of it in the queue's stream either.
        QueueNotFoundError, ValidationError, RedisUnavailableError: as ``Inspector.get_task``.
    """
    try:
        return insp.get_task(queue, task_id), None
    except TaskNotFoundError:
        if _on_asynq():
            raise  # asynq keeps no record of a task gone, and no event stream to find it in
        record = insp.task_record(queue, task_id)
        events = insp.task_events(queue, task_id, window=record.window() if record else None)
        if record is not None:
            gone = GoneTask.from_record(record, events)
            return gone, events if not gone.source else record.events()
        if not events:
            raise
        return GoneTask.from_events(queue, task_id, events), events


def sections_context(insp: Any, queue: str, task: Any, events: list[Any] | None = None) -> dict[str, Any]:
    """What the live sections render: the same for every viewer (they hold no payload nor result, which
    ``TASKS_REDACT`` masks per viewer), so one rendering feeds every open page of the task. The error text they
    hold is masked by ``TASKS_REDACT_PATTERNS`` for every viewer alike."""
    record = getattr(task, "record", None)
    asynq = _on_asynq()
    if asynq:
        events, source = [], ""  # asynq writes no event stream: nothing to read
    elif events is None:
        events, source = history(insp, queue, task)
    elif getattr(task, "source", ""):
        source = task.source
    else:
        source = "the queue's event stream" + ("" if events and not events[0].from_state else " (its oldest part)")
    task, events = mask_task_text(task), mask_events(events)
    attempts = record.attempts() if record is not None and task.source else attempts_of(events)
    traces = task_traces(task, events, attempts)
    return {
        "task": task,
        "queue": queue,
        "events": events,
        "attempts": attempts,
        "traces": traces,
        "traced_attempts": any(a.trace for a in attempts),
        "history_source": source,
        "running_servers": {server.id for server in insp.servers()},
        "fingerprint_search": group_search(queue, task.type, getattr(task, "error_fingerprint", None) or ""),
        "retention_left": _seconds_until(getattr(task, "expires_at", None)),
        "lease_left": _seconds_until(getattr(task, "lease_expires_at", None)),
        # asynq's keys: the one line each section shows instead (a task's timeline ends at its last error there).
        "absent_timeline": key_format.ABSENT_ON_ASYNQ["timeline"] if asynq else "",
        "absent_attempts": key_format.ABSENT_ON_ASYNQ["attempts"] if asynq else "",
    }


def _on_asynq() -> bool:
    return key_format.on_asynq(conf.taskq_settings())


def render_sections(context: dict[str, Any]) -> dict[str, str]:
    """Each live section as the page renders it, for the live feed."""
    return {name: render_to_string(template, context) for name, template in SECTIONS.items()}


def history(insp: Any, queue: str, task: Any) -> tuple[list[Any], str]:
    """The task's events, oldest first, and where they came from: its queue's stream while it holds them all
    (back to the task's creation), and the exported Parquet files for the part the stream has trimmed. Both are
    read within the task's lifetime (its creation to its last move), so an old task in a queue of a million costs
    what a new one does, and so does one that waited behind a million others (the stream's newer part, the
    traffic since its last move, is skipped)."""
    window = event_window(task.created_at, task.state_since)  # bounds both reads: neither grows with the queue
    # The stream is read from the task's last move down: the queue's traffic since is not read.
    last_move = to_ms(task.state_since.timestamp()) if task.state_since else None
    events = insp.task_events(queue, task.id, window=window, last_move=last_move)
    if events and not events[0].from_state:
        return events, "the queue's event stream"
    if extras.missing_modules("spark"):  # no exporter can have run (it needs pyarrow): the stream is all there is
        return events, "the queue's event stream (its oldest events were trimmed and not exported)"
    # optional: pyarrow (taskq[spark]); the stream alone serves a page without it
    from taskq.queues.history.event_files import task_events

    seen = {e.stream_id for e in events}
    exported = [
        TaskEvent(
            row["task_id"], row["type"] or "", row["from_state"] or "", row["to_state"] or "",
            datetime.fromtimestamp(row["at_ms"] / 1000, UTC), row["worker"] or "", row["error"] or "",
            row.get("lease") or "", row["stream_id"],
            datetime.fromtimestamp(row["started_ms"] / 1000, UTC) if row.get("started_ms") else None,
        )
        for row in task_events(conf.taskq_settings().event_export_dir, queue, task.id, window)
        if row["stream_id"] not in seen
    ]  # fmt: skip
    if not exported:
        return events, "the queue's event stream (its oldest events were trimmed and not exported)"
    merged = sorted([*exported, *events], key=lambda e: (e.at or datetime.min.replace(tzinfo=UTC), e.stream_id))
    return merged, "the exported event files, then the queue's event stream"


def _seconds_until(when: datetime | None) -> float | None:
    return None if when is None else (when - datetime.now(tz=UTC)).total_seconds()
