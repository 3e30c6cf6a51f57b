"""Things registered by task type and found by the longest registered prefix of a type: handlers and
aggregation functions route alike, so a group goes where its oldest task would."""

from __future__ import annotations

import threading
from typing import Generic, Protocol, TypeVar


class Typed(Protocol):
    @property
    def type(self) -> str: ...


T = TypeVar("T", bound=Typed)


class TypeRoutes(Generic[T]):
    """Items by the task type (or type prefix) each names. Thread-safe: workers route while modules register."""

    def __init__(self) -> None:
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()

    def add(self, item: T) -> T:
        with self._lock:
            self._items[item.type] = item
        return item

    def route(self, task_type: str) -> T | None:
        """The item registered for the longest prefix of ``task_type`` (an exact match being the longest)."""
        best = None
        # A snapshot: a module may register while a worker routes.
        for pattern, candidate in tuple(self._items.items()):
            if task_type.startswith(pattern) and (best is None or len(pattern) > len(best.type)):
                best = candidate
        return best

    def types(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, task_type: str) -> bool:
        return task_type in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
