"""Coalescing: many transitions in, one summary per group out.

A burst of thousands of transitions per second must not become thousands of WebSocket messages: the browser
would spend its time parsing. Within one window the hub keeps, per queue, only the latest transition of each
task (with the state it came from at the start of the window, so a page can tell where the task left), how many
events there were, and the last event id; per watched task it keeps every transition, for the task's history.
Counts are not derived from events: the hub reads them fresh when it sends, so a page's counts never drift.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from taskq.queues.engine.events import StreamEvent
from taskq.queues.redaction_access import mask_event_entry

#: Task rows per queue per message, at most; the rest are counted in ``more`` (the page can offer a reload).
MAX_TASKS_PER_MESSAGE = 500


def shown(event: StreamEvent) -> dict[str, Any]:
    """The event as every page may see it: its error text masked by TASKS_REDACT_PATTERNS."""
    return mask_event_entry(event.as_dict())


@dataclass
class QueueWindow:
    """What happened in one queue during a window."""

    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: int = 0
    last_id: str = ""
    active_moved: bool = False  # a task started or stopped running: the servers page changes

    def add(self, event: StreamEvent) -> None:
        self.events += 1
        self.last_id = event.event_id
        entry = shown(event)
        previous = self.tasks.pop(event.task_id, None)  # pop + insert keeps the dict in order of last change
        if previous is not None:
            entry["from"] = previous["from"]
        self.tasks[event.task_id] = entry
        if "active" in (event.from_state, event.to_state):
            self.active_moved = True

    def summary(self, limit: int = MAX_TASKS_PER_MESSAGE) -> tuple[list[dict[str, Any]], int]:
        """The newest ``limit`` task entries (oldest first) and how many more were left out."""
        rows = list(self.tasks.values())
        more = max(0, len(rows) - limit)
        return rows[more:], more


@dataclass
class Window:
    queues: dict[str, QueueWindow] = field(default_factory=dict)
    histories: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(q.events for q in self.queues.values())


class Coalescer:
    """Collects events until ``drain()``. ``watched_tasks`` names the (queue, task id) pairs whose every event is
    kept for the task page; other tasks only keep their latest transition."""

    def __init__(self) -> None:
        self.window = Window()

    def add(self, events: list[StreamEvent], watched_tasks: AbstractSet[tuple[str, str]] = frozenset()) -> None:
        for event in events:
            self.window.queues.setdefault(event.queue, QueueWindow()).add(event)
            key = (event.queue, event.task_id)
            if key in watched_tasks:
                self.window.histories.setdefault(key, []).append(shown(event))

    def touch(self, queue: str) -> None:
        """Have the next window name ``queue`` even without events (its counts are to be read again)."""
        self.window.queues.setdefault(queue, QueueWindow())

    def drain(self) -> Window:
        window, self.window = self.window, Window()
        return window

    def __bool__(self) -> bool:
        return bool(self.window.queues)


def coalesce(events: list[StreamEvent], task: tuple[str, str] | None = None) -> Window:
    """One window of ``events`` (for a replay), keeping every event of ``task`` if given."""
    coalescer = Coalescer()
    coalescer.add(events, {task} if task else frozenset())
    return coalescer.drain()
