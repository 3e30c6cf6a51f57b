"""Finding one task's entries in its queue's event stream without reading the rest of the queue's traffic.

A queue's stream holds every transition of every task of the queue (about 100,000 entries, capped), and no index by
task. A task's entries lie between its creation and its last move, newest last, so its history is read newest first
from the entry of its last move, down to its creation (``scan_back``). What this module adds is where that read
starts: ``moment_end`` finds, by the event times the entries carry, the end of the entries timed at or before a
moment, in a few round trips however long the stream. Event times rise with the stream's order, to within the
clocks of the hosts that wrote them; a bisection that a skewed clock misleads only starts the read too early, which
``TaskReads.task_events`` detects (the newest entry read is not the task's last move) and then reads from the
newest entry, as without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..sans_io import Command

#: Stream entries read per round trip of a history scan: a first page of ``FIRST_PAGE`` (from a task's last move,
#: its creation is often that near), then pages of ``SCAN_PAGE``.
FIRST_PAGE = 100
SCAN_PAGE = 1000
#: Positions probed per round trip of ``moment_end``: a stream spanning a year of milliseconds takes 9 rounds.
PROBES = 16

#: Sends commands in one round trip and returns their replies (``InspectorCore.batch`` of an operation).
Read = Callable[[list[Command]], list[Any]]


def entry_at(entries: list[Any], index: int) -> int:
    """The event time (ms) of ``entries[index]`` (an XRANGE reply); 0 when there is no such entry or time, so a
    bound compared with it never skips what it cannot date."""
    if not entries:
        return 0
    at = entries[index][1].get(b"at", b"")
    return int(at) if at.isdigit() else 0


def _first_at(stream: str, ms: int) -> Command:
    """The first entry whose id is at or after millisecond ``ms`` of the stream's clock."""
    return Command("xrange", (stream, str(ms), "+"), {"count": 1})


def _id_ms(entries: list[Any], index: int) -> int:
    return int(entries[index][0].split(b"-")[0])


def moment_end(read: Read, stream: str, at_ms: int) -> str | None:
    """The stream id (an XREVRANGE end: a millisecond of the stream's clock, all its entries) up to which the
    entries may be timed at or before ``at_ms``: the entry just after it is timed later. None when the newest entry
    is timed at or before ``at_ms`` (or the stream is empty): nothing to skip.

    A bisection over the stream's ids (its clock's milliseconds, not its event times, which need not be Redis's
    clock), ``PROBES`` ids a round trip, each probe one ``XRANGE ... COUNT 1`` (O(log n) in Redis)."""
    head, tail = read([_first_at(stream, 0), Command("xrevrange", (stream, "+", "-"), {"count": 1})])
    if not tail or entry_at(tail, 0) <= at_ms:
        return None
    # The first millisecond whose first entry is timed after at_ms is in [low, high]; high is one past the newest
    # entry's millisecond until a probe finds one (the whole of that millisecond is then read).
    low, high = _id_ms(head, 0), _id_ms(tail, 0) + 1
    while low < high:
        step = max(1, (high - low) // PROBES)
        probes = list(range(low, high, step))[:PROBES]
        for ms, reply in zip(probes, read([_first_at(stream, ms) for ms in probes]), strict=True):
            if entry_at(reply, 0) > at_ms:
                high = ms
                break
            low = ms + 1
    return str(high - 1)


def scan_back(
    read: Read, stream: str, task_id: str, end: str, earliest: int, limit: int
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """The task's entries (id, fields), oldest first, read newest first from ``end`` (an XREVRANGE end; ``+``: the
    newest entry): down to its creation (the only kind of event with no ``from`` state; nothing older is about this
    task), the first page of entries timed before ``earliest``, the stream's oldest entry, or ``limit`` entries read,
    whichever comes first."""
    wanted = task_id.encode()
    found: list[tuple[bytes, dict[bytes, bytes]]] = []
    last, scanned, skip, page = end, 0, 0, FIRST_PAGE
    while scanned < limit:
        count = min(page, limit - scanned) + skip
        (entries,) = read([Command("xrevrange", (stream, last, "-"), {"count": count})])
        entries = entries[skip:]  # after the first page, XREVRANGE repeats the entry it starts from
        if not entries:
            break
        scanned += len(entries)
        last, skip, page = entries[-1][0], 1, SCAN_PAGE
        for entry_id, fields in entries:
            if fields.get(b"id") == wanted:
                found.append((entry_id, fields))
                if not fields.get(b"from"):
                    return found[::-1]
        if entry_at(entries, -1) < earliest:
            break
    return found[::-1]
