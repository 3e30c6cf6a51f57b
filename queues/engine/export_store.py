"""What the event exporter reads and writes in Redis: its lease (one exporter at a time across all workers), the
per-queue offset it has committed (which also bounds how far the scripts trim each event stream), the stream
entries past that offset, and the gaps it found. Only the engine talks to Redis; the exporter goes through this.

Ordering that makes a restart lose and double nothing: the exporter reads entries after the committed id,
stores them durably (Parquet, deterministic file names), and only then commits the id of the last one. A crash
between the two re-reads the same entries and overwrites the same files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .broker import BrokerStore
from .clock import to_ms
from .sans_io import command
from .scripts import script
from .transitions import Call

#: The offset of a queue whose exporter has not stored anything yet.
START = "0-0"


def parse_stream_id(stream_id: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> (1700000000000, 3), for ordering stream ids (string order is wrong)."""
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class StreamEntry:
    """One event as stored in a queue's stream: its stream id and its fields (id, type, from, to, at, ...)."""

    stream_id: str
    fields: dict[str, str]


@dataclass(frozen=True)
class Gap:
    """Events between ``committed`` and ``first_id`` were trimmed before the exporter stored them."""

    queue: str
    committed: str
    first_id: str
    detected_at_ms: int


@dataclass
class QueueExportStatus:
    queue: str
    committed: str | None  # None: no exporter attached, the stream is trimmed by length only
    cap: int
    length: int
    first_id: str | None
    last_id: str | None
    last_gap: Gap | None = None

    @property
    def behind(self) -> bool:
        """Whether the stream holds events the exporter has not committed yet."""
        return self.last_id is not None and (
            self.committed is None or parse_stream_id(self.last_id) > parse_stream_id(self.committed)
        )


@dataclass
class ExportStatus:
    holder: str | None  # the exporter that holds the lease now
    gaps: int  # gaps detected since the start, over all queues
    queues: list[QueueExportStatus] = field(default_factory=list)


class ExportStore(BrokerStore):
    area = "export"

    def _run(self, op: str, name: str, keys: list[str], args: list[Any]) -> Any:
        return self.broker.run(Call(f"export.{op}", script(name), keys, args))

    # -- the lease ---------------------------------------------------------------------------------------------

    def acquire(self, holder: str, ttl: float) -> bool:
        """Take or extend the exporter lease for ``ttl`` seconds; False while another exporter holds it."""
        return bool(self._run("acquire", "export_lease", [self.keys.export_lease], [holder, max(1, to_ms(ttl))]))

    def release(self, holder: str) -> None:
        """Give the lease up (only when ``holder`` has it), so another worker's exporter takes over at once."""
        self._run("release", "export_lease", [self.keys.export_lease], [holder, 0])

    def holder(self) -> str | None:
        value = self._send("holder", "get", self.keys.export_lease)
        return value.decode() if value else None

    # -- offsets -----------------------------------------------------------------------------------------------

    def queues(self) -> list[str]:
        return sorted(q.decode() for q in self._send("queues", "smembers", self.keys.queues))

    def attach(self, queue: str, cap: int) -> str:
        """Start (or keep) exporting ``queue``: its stream is trimmed no further than the committed id from now
        on, and never beyond ``cap`` entries. Returns the committed id (``START`` for a new one)."""
        reply = self._run("attach", "export_attach", [self.keys.queue(queue).event_offset], [int(cap)])
        return str(reply.decode() if isinstance(reply, bytes) else reply)

    def detach(self, queue: str) -> None:
        """Stop exporting ``queue``: its stream goes back to plain length trimming."""
        self._send("detach", "delete", self.keys.queue(queue).event_offset)

    def committed(self, queue: str) -> str | None:
        value = self._send("committed", "hget", self.keys.queue(queue).event_offset, "committed")
        return value.decode() if value else None

    def commit(self, queue: str, stream_id: str) -> None:
        """Record that every event up to ``stream_id`` is stored. Never moves an offset back."""
        self._run("commit", "export_commit", [self.keys.queue(queue).event_offset], [stream_id])

    # -- reading -----------------------------------------------------------------------------------------------

    def read(self, queue: str, after: str, count: int) -> list[StreamEntry]:
        """Up to ``count`` entries of the queue's stream after ``after`` (exclusive), oldest first."""
        stream = self.keys.queue(queue).events
        rows = self._send("read", "xrange", stream, f"({after}" if after != START else "-", "+", count=count)
        return [
            StreamEntry(sid.decode(), {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()})
            for sid, fields in rows
        ]

    def find_gap(self, queue: str, committed: str) -> Gap | None:
        """A gap when the oldest entry still in the stream is newer than the committed one: entries in between
        were trimmed (by the hard cap, or by hand) before they were stored. None for a queue never exported."""
        if committed == START:
            return None
        first = self._send("find_gap", "xrange", self.keys.queue(queue).events, "-", "+", count=1)
        if not first:
            return None
        first_id = first[0][0].decode()
        if parse_stream_id(first_id) <= parse_stream_id(committed):
            return None
        return Gap(queue, committed, first_id, to_ms(self.broker.clock.now()))

    def record_gap(self, gap: Gap) -> int:
        """Count a gap and keep it as the queue's last one; returns the number of gaps so far."""
        last = json.dumps([gap.committed, gap.first_id, gap.detected_at_ms])
        replies = self._batch(
            "record_gap",
            [
                command("hincrby", self.keys.export_status, "gaps", 1),
                command("hset", self.keys.export_status, f"gap:{gap.queue}", last),
            ],
        )
        return int(replies[0])

    # -- status (the inspector and CLI show it) ----------------------------------------------------------------

    def status(self) -> ExportStatus:
        queues = self.queues()
        commands = [command("get", self.keys.export_lease), command("hgetall", self.keys.export_status)]
        for queue in queues:
            q = self.keys.queue(queue)
            commands += [
                command("hmget", q.event_offset, "committed", "cap"),
                command("xlen", q.events),
                command("xrange", q.events, "-", "+", count=1),
                command("xrevrange", q.events, "+", "-", count=1),
            ]
        replies = self._batch("status", commands, atomic=False)
        holder, stats = replies[0], {k.decode(): v.decode() for k, v in replies[1].items()}
        out = ExportStatus(holder.decode() if holder else None, int(stats.get("gaps", 0)))
        for i, queue in enumerate(queues):
            (committed, cap), length, first, last = replies[2 + 4 * i : 6 + 4 * i]
            gap = stats.get(f"gap:{queue}")
            last_gap = Gap(queue, *json.loads(gap)) if gap else None
            out.queues.append(
                QueueExportStatus(
                    queue,
                    committed.decode() if committed else None,
                    int(cap or 0),
                    int(length),
                    first[0][0].decode() if first else None,
                    last[0][0].decode() if last else None,
                    last_gap,
                )
            )
        return out
