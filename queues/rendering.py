"""How the console and the Django admin show opaque bytes (payloads, results): pretty JSON when they are JSON, text
when they are UTF-8, a hex dump otherwise; long ones truncated unless the user asks for all of it. JSON nested
deeper than ``TASKS_MAX_PAYLOAD_DEPTH`` (written before the limit, or by another client) is not parsed: it reads
"too deeply nested to display", so the page around it still renders and its actions still work.

Only text comes out of here; templates escape it. Nothing is marked safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engine import nesting
from .engine.validation import escape_surrogates

if TYPE_CHECKING:
    from .engine import TaskInfo

PREVIEW_CHARS = 4000
HEX_BYTES_PER_LINE = 16
MAX_FULL_BYTES = 2 * 1024 * 1024  # "show all" still stops somewhere: a page of 2 MiB is already slow


TOO_DEEP = "too deeply nested to display"


@dataclass(frozen=True)
class RenderedBytes:
    kind: str  # "json", "text", "hex", "deep" (JSON nested past the limit: ``text`` says so) or "empty"
    text: str
    size: int  # bytes
    truncated: bool


def render_bytes(data: bytes | None, *, full: bool = False, max_depth: int | None = None) -> RenderedBytes:
    """``max_depth``: the deepest JSON parsed (default ``TASKS_MAX_PAYLOAD_DEPTH``)."""
    if not data:
        return RenderedBytes("empty", "", 0, False)
    if max_depth is None:
        from .conf import taskq_settings  # settings: read on use, so this module loads without Django set up

        max_depth = taskq_settings().max_payload_depth
    limit = MAX_FULL_BYTES if full else PREVIEW_CHARS
    # A hex dump takes about 4 characters per byte: dump only what will be shown.
    kind, text, dumped = _decode(data, hex_bytes=limit // 4, max_depth=max_depth)
    truncated = len(text) > limit or dumped < len(data)
    return RenderedBytes(kind, text[:limit], len(data), truncated)


def _decode(data: bytes, hex_bytes: int, max_depth: int) -> tuple[str, str, int]:
    """(kind, text, how many bytes the text covers)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "hex", hex_dump(data[:hex_bytes]), min(len(data), hex_bytes)
    try:
        value = nesting.loads(text, max_depth)
    except nesting.TooDeepError:
        return "deep", TOO_DEEP, len(data)
    except ValueError:
        if _printable(text):
            return "text", text, len(data)
        return "hex", hex_dump(data[:hex_bytes]), min(len(data), hex_bytes)
    return "json", escape_surrogates(json.dumps(value, indent=2, ensure_ascii=False)), len(data)


def _printable(text: str) -> bool:
    return all(ch.isprintable() or ch in "\n\r\t" for ch in text)


def hex_dump(data: bytes) -> str:
    """``offset  hex bytes  |ascii|`` lines, like ``hexdump -C``."""
    lines = []
    for offset in range(0, len(data), HEX_BYTES_PER_LINE):
        chunk = data[offset : offset + HEX_BYTES_PER_LINE]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<{HEX_BYTES_PER_LINE * 3 - 1}}  |{ascii_}|")
    return "\n".join(lines)


def preview(data: bytes, chars: int = 80) -> str:
    """One line for a table cell: the text squeezed onto a line, or hex for binary data."""
    head = data[: chars * 4]
    text: str | None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the slice at the end is still text.
        cut = len(data) > len(head) and exc.start >= len(head) - 3
        text = head[: exc.start].decode("utf-8") if cut else None
    line = " ".join(text.split()) if text is not None and _printable(text) else data[: chars // 3].hex(" ")
    return line if len(line) <= chars else line[: chars - 1] + "…"


def retries_text(task: TaskInfo) -> str:
    """A task's retries as the console and the CLI show them, honest about how its last attempt ended.

    The engine's ``retried`` counts failed attempts, the last one included: an archived task with ``max_retry`` 2
    holds 3, and one that raised SkipRetry on its first attempt holds 1. Read bare ("3/2", "1/5") that looked like
    a broken limit. The worker archives in the same script call that records the failure (``lua/archive.lua``
    writes ``failed_at`` and ``since`` with one clock), so an archived task whose failure time is its state's time
    was archived by its last attempt: with retries spent, or by SkipRetry when some were left. An operator's archive
    leaves ``failed_at`` as it was. A workflow's cascade (a member cancelled because another failed) and its archive
    action write ``failed_at`` too, but archive a task no attempt of which failed: ``retried`` is 0, which SkipRetry
    never leaves (it counts the attempt that raised it).
    """
    failures, limit = task.retried, task.max_retry
    if task.state == "archived":
        if task.last_failed_at is None or task.last_failed_at != task.state_since:
            return f"archived by an operator after {failures} failed attempt{'s' if failures != 1 else ''}"
        if failures == 0:
            return "archived before it ran" if task.last_run_seconds is None else "archived with no failed attempt"
        if failures > limit:
            return f"retried {limit} of {limit}, then archived"
        if failures == 1:
            return "no retry (SkipRetry)"
        return f"retried {failures - 1} of {limit}, then no retry (SkipRetry)"
    if task.state == "retry":
        if failures == 0:  # RetryWithoutFailure: the handler asked for a retry that counts as no failure
            return f"retry due, not counted (0 of {limit} used)"
        return f"retry {failures} of {limit} due"  # failed ``failures`` times; that retry waits for its time
    return f"retried {min(failures, limit)} of {limit}"
