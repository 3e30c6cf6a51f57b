"""Rendering for the CLI: JSON documents for tools, aligned tables and key/value blocks for people.

Every command builds one JSON-ready document; the human text is derived from the same figures, so ``--json`` and
the tables never disagree. Anything that came from a task (payloads, errors, type names) is escaped before it
reaches a terminal: a payload holding ``\\x1b[2J`` must not clear the operator's screen.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from taskq.queues.engine import QueueInfo, ServerInfo, TaskInfo
from taskq.queues.engine.records import picked

CELL_WIDTH = 48  # longest cell in a table before it is cut with an ellipsis


@dataclass
class Output:
    """What a command produced: ``doc`` is printed under ``--json``, ``text`` otherwise."""

    doc: dict[str, Any]
    text: str


def dumps(doc: Any) -> str:
    # ASCII with \u escapes: the document stays valid JSON whatever encoding stdout has.
    return json.dumps(doc, indent=2, ensure_ascii=True)


# -- values --------------------------------------------------------------------------------------------------


def iso(when: datetime | None) -> str | None:
    """ISO 8601 in UTC, to the millisecond (``2024-05-01T12:00:03.250+00:00``), or None."""
    if when is None:
        return None
    return when.astimezone(UTC).isoformat(timespec="milliseconds")


def put_bytes(doc: dict[str, Any], name: str, value: bytes | None) -> None:
    """Store a bytes field as UTF-8 text when it decodes, else as base64 with ``<name>_encoding`` beside it."""
    if value is None:
        doc[name] = None
        return
    try:
        doc[name] = value.decode("utf-8")
    except UnicodeDecodeError:
        doc[name] = base64.b64encode(value).decode("ascii")
        doc[f"{name}_encoding"] = "base64"


def error_rate(processed: int, failed: int) -> float:
    """Failed over processed (processed counts every finished attempt, failed ones included, as in asynq)."""
    return round(failed / processed, 4) if processed else 0.0


def task_doc(task: TaskInfo) -> dict[str, Any]:
    doc = picked(task, "id type queue state")
    put_bytes(doc, "payload", task.payload)
    doc.update(
        picked(task, "retried max_retry last_error last_traceback error_fingerprint"),
        last_failed_at=iso(task.last_failed_at),
    )
    put_bytes(doc, "result", task.result)
    doc.update(
        {
            "progress": None if task.progress is None else {"done": task.progress[0], "total": task.progress[1]},
            "next_process_at": iso(task.next_process_at),
            "timeout": task.timeout,
            "deadline": iso(task.deadline),
            "headers": dict(task.headers),
            "created_at": iso(task.created_at),
            "completed_at": iso(task.completed_at),
            "last_run_seconds": task.last_run_seconds,
            "expires_at": iso(task.expires_at),
            "lease_expires_at": iso(task.lease_expires_at),
            "orphaned": task.orphaned,
            "state_since": iso(task.state_since),
            "unique_key": task.unique_key,
            "retention": task.retention,
            "after": list(task.after),
            "waiting_on": list(task.waiting_on),
        }
    )
    return doc


def queue_doc(info: QueueInfo) -> dict[str, Any]:
    return {
        "queue": info.queue,
        **info.counts(),
        **picked(info, "size paused"),
        "latency_seconds": round(info.latency, 3),
        **picked(info, "memory_bytes processed_today failed_today"),
        "error_rate_today": error_rate(info.processed_today, info.failed_today),
        **picked(info, "processed_total failed_total"),
    }


def server_doc(server: ServerInfo) -> dict[str, Any]:
    return {
        **picked(server, "id host pid status"),
        "started_at": iso(server.started_at),
        "queues": dict(server.queues),
        **picked(server, "strict concurrency"),
        "active": [worker_doc(w) for w in server.active],
        "heartbeat_at": iso(server.heartbeat_at),
    }


def worker_doc(worker: dict[str, Any]) -> dict[str, Any]:
    """A busy worker as the heartbeat wrote it, with its epoch-ms ``started`` also given as ``started_at``."""
    doc = dict(worker)
    started = doc.get("started")
    if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
        doc["started_at"] = iso(datetime.fromtimestamp(started / 1000, tz=UTC))
    return doc


# -- text ----------------------------------------------------------------------------------------------------


def printable(value: Any) -> str:
    """One terminal-safe line: control characters (newlines included) escaped, as ``repr`` would."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def cut(text: str, width: int = CELL_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def show_bytes(value: bytes | None) -> str:
    if value is None:
        return "-"
    try:
        return printable(value.decode("utf-8"))
    except UnicodeDecodeError:
        return f"<{len(value)} bytes, base64 {base64.b64encode(value).decode('ascii')}>"


def duration(seconds: float) -> str:
    """``1h2m3s``-style, as asynq prints durations; sub-second values keep two decimals."""
    if seconds < 1:
        return f"{seconds:.2f}s"
    whole = int(round(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{days}d" if days else "",
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs or whole == 0 else "",
    ]
    return "".join(parts)


def when(moment: datetime | None, now: float) -> str:
    """``2024-05-01 12:00:03 UTC (in 4m30s)`` / ``(2m ago)``; ``-`` when unset."""
    if moment is None:
        return "-"
    stamp = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    delta = moment.timestamp() - now
    relative = f"in {duration(delta)}" if delta >= 0 else f"{duration(-delta)} ago"
    return f"{stamp} ({relative})"


def size(count: float) -> str:
    """Bytes for people: ``512 B``, ``1.5 KiB``, ``3.2 MiB``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def percent(rate: float) -> str:
    return f"{rate * 100:.2f}%"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Iterable[int] = ()) -> str:
    """An aligned table with a dashed rule under the header, as asynq prints them. Columns whose index is in
    ``numeric`` are right-aligned."""
    right = set(numeric)
    cells = [[cut(printable(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return "  ".join(padded).rstrip()

    out = [line(headers), line(["-" * len(h) for h in headers])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def state_table(counts: dict[str, int]) -> str:
    """One row of counts, a column per state (``PENDING ACTIVE ...``)."""
    states = list(counts)
    return table([s.upper() for s in states], [[counts[s] for s in states]], numeric=range(len(states)))


def fields(pairs: Iterable[tuple[str, Any]]) -> str:
    """A key/value block with the values aligned: ``Queue:    default``."""
    items = [(f"{key}:", printable(value)) for key, value in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}".rstrip() for k, v in items)
