"""URL converters for queue names, task ids and task types.

All may contain ``/`` (nothing forbids it), and a queue may be named ``..``, which a plain path segment cannot
carry: ``taskq.queues.segments`` writes ``~`` as ``~7E``, ``/`` as ``~2F`` and a segment of only dots as ``~2E`` per
dot, the same scheme as the HTTP API's; every other character is left to Django's percent-encoding. A segment
that cannot be a valid name (braces in a queue name, an oversized id, control characters, a stray ``~``) does
not match, so the request ends in a 404 instead of reaching a view.
"""

from __future__ import annotations

from taskq.queues.engine import validation
from taskq.queues.engine.errors import ValidationError
from taskq.queues.segments import escape_segment, unescape_segment

__all__ = ["QueueNameConverter", "TaskIdConverter", "TaskTypeConverter", "escape_segment", "unescape_segment"]


class _NameConverter:
    """A path segment holding one name, checked by the engine's validation function ``check``."""

    regex = r"[^/]+"
    check = ""

    def to_python(self, value: str) -> str:
        try:
            return str(getattr(validation, self.check)(unescape_segment(value)))
        except ValidationError as exc:
            raise ValueError(str(exc)) from None

    def to_url(self, value: str) -> str:
        return escape_segment(value)


def _named(check: str) -> type[_NameConverter]:
    return type(f"{check.title().replace('_', '')}Converter", (_NameConverter,), {"check": check})


QueueNameConverter = _named("queue_name")
TaskIdConverter = _named("task_id")
TaskTypeConverter = _named("task_type")
