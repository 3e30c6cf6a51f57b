"""What an operator's quiet or stop leaves behind, and what is kept of a worker server once it has ended.

A server that acts on a quiet or stop writes an acknowledgement (``Keys.control_ack``), which ``tasks server
quiet|stop`` and the console wait for. A server that ends keeps a record for ``TASKS_SERVER_RECORD_SECONDS``
(``Keys.ended_server``): how it ended (``graceful``, or ``lost`` when its heartbeat ran out without a graceful
exit: killed, crashed or cut off), when, and what became of each task it held. The worker writes the record of a
graceful exit itself; the recoverer of any worker writes that of a lost server, and adds each task it recovers
after its lease. ``WorkerStore`` writes both, ``Inspector`` reads them.

A running server is described by its heartbeat (``ServerInfo``), which is also what an ended server's record keeps
of it: the two records of a server live here, below both their writer and their reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any

from .clock import from_ms

#: What an operator may ask of a worker server: stop fetching and finish what runs, or shut down gracefully.
SERVER_ACTIONS = ("quiet", "stop")
#: Seconds a request waits for its server (a server that is not listening reads it at its next heartbeat; a gone
#: one never does) and its acknowledgement is kept (a stop's ack must outlive the server it stopped).
CONTROL_TTL = 3600

#: Heartbeat intervals after which a server's heartbeat counts as late (it is lost after three: its TTL).
LATE_ROUNDS = 2

#: How a server ended.
GRACEFUL, LOST = "graceful", "lost"
LOST_REASON = "its heartbeat ran out without a graceful exit (killed, crashed, or cut off from Redis)"

#: What became of a task a server held when it ended: the code the record stores -> what a person reads.
OUTCOMES = {
    "finished": "finished",
    "failed": "failed, and went to retry or the archive as its handler's error says",
    "requeued": "requeued: back at the head of pending, for any worker",
    "unstarted": "requeued before it started (it had been fetched ahead)",
    "dropped": "stopped: its lease had been taken over, another attempt owns it",
    "running": "was running when the server was lost: it goes to retry once its lease runs out",
    "unwritten": "its outcome was not written before the exit: it goes to retry once its lease runs out",
    "recovered": "recovered after its lease ran out",
}

#: Field of a record's hash that holds the server; the tasks' fields start with ``TASK_FIELD``.
SERVER_FIELD, TASK_FIELD = "server", "task:"


def task_field(queue: str, task_id: str) -> str:
    """The hash field of one held task: task ids are unique within a queue only, so both go, as JSON (a queue
    name may hold any character but braces)."""
    return TASK_FIELD + json.dumps([queue, task_id])


def acked(requested: str, acknowledged: str) -> bool:
    """Whether a server that acknowledged ``acknowledged`` did what ``requested`` asks: a stop quiets first."""
    return acknowledged == requested or (requested == "quiet" and acknowledged == "stop")


@dataclass
class ServerInfo:
    """A worker server as its heartbeat describes it: what it serves, how, and the tasks it runs (``active``)."""

    id: str
    host: str
    pid: int
    started_at: datetime | None
    status: str
    queues: dict[str, int]
    strict: bool
    concurrency: int
    active: list[dict[str, Any]] = field(default_factory=list)
    heartbeat_at: datetime | None = None  # when its last heartbeat was written (None from older workers)
    pool: str = "thread"
    prefetch: int = 0
    processed: int = 0  # attempts it finished since it started (failures included, as asynq counts)
    failed: int = 0
    process_index: int | None = None  # its place under a ``--processes`` supervisor
    patterns: list[str] = field(default_factory=list)  # the glob patterns of its ``--queues`` (``tenant-*``)
    rss: int | None = None  # resident bytes at its last heartbeat (None from older workers)
    cpu: float | None = None  # CPU seconds over wall seconds between its last two heartbeats (1.0: one core)
    heartbeat_every: float | None = None  # seconds between its heartbeats

    def heartbeat_age(self, now: datetime) -> float | None:
        """Seconds since its last heartbeat, as of ``now``."""
        return (now - self.heartbeat_at).total_seconds() if self.heartbeat_at else None

    def late(self, now: datetime) -> bool:
        """Whether its heartbeat is late: older than two heartbeat intervals. A server stays listed until its
        heartbeat is three intervals old (the TTL the worker writes, after which the recoverer records it lost), so
        a late server is one round from being declared lost."""
        age = self.heartbeat_age(now)
        return age is not None and bool(self.heartbeat_every) and age > LATE_ROUNDS * (self.heartbeat_every or 0)

    def reads(self, queue: str) -> bool:
        """Whether this server fetches from ``queue``: it is active (not quiet nor stopping) and serves the queue by
        name, or by a pattern that matches it (a worker resolves its patterns every round, so a queue created a
        moment ago may not be among its queues yet)."""
        if self.status != "active":
            return False
        return queue in self.queues or any(fnmatchcase(queue, pattern) for pattern in self.patterns)


def server_info(doc: dict[str, Any], active: list[dict[str, Any]]) -> ServerInfo:
    """A server as its heartbeat (or its record) describes it."""
    return ServerInfo(
        id=doc["id"],
        host=doc.get("host", ""),
        pid=doc.get("pid", 0),
        started_at=from_ms(doc.get("started")),
        status=doc.get("status", "active"),
        queues=doc.get("queues", {}),
        strict=doc.get("strict", False),
        concurrency=doc.get("concurrency", 0),
        active=active,
        heartbeat_at=from_ms(doc.get("heartbeat")),
        pool=doc.get("pool", "thread"),
        prefetch=doc.get("prefetch", 0),
        processed=doc.get("processed", 0),
        failed=doc.get("failed", 0),
        process_index=doc.get("process_index"),
        patterns=doc.get("patterns", []),
        rss=doc.get("rss"),
        cpu=doc.get("cpu"),
        heartbeat_every=doc.get("heartbeat_every"),
    )


@dataclass
class Acknowledgement:
    """A server's answer to an operator's request: what it acted on, and when."""

    action: str
    at: datetime | None


@dataclass
class HeldTask:
    """A task a server held (ran or had fetched ahead) when it ended, and what became of it."""

    queue: str
    id: str
    type: str
    outcome: str  # one of OUTCOMES
    detail: str = ""
    at: datetime | None = None

    @property
    def description(self) -> str:
        text = OUTCOMES.get(self.outcome, self.outcome)
        return f"{text} ({self.detail})" if self.detail else text


@dataclass
class ServerRecord:
    """A server that stopped or was lost: its last heartbeat (``server``, status ``stopped`` or ``lost``), how and
    when it ended, and its tasks."""

    server: ServerInfo
    how: str  # GRACEFUL or LOST
    reason: str
    ended_at: datetime | None
    tasks: list[HeldTask] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.server.id


def held_tasks(fields: dict[bytes, bytes]) -> list[HeldTask]:
    """The tasks of a record's hash, oldest outcome first."""
    tasks = []
    for name, raw in fields.items():
        key = name.decode(errors="replace")
        if not key.startswith(TASK_FIELD):
            continue
        try:
            queue, task_id = json.loads(key[len(TASK_FIELD) :])
            doc: dict[str, Any] = json.loads(raw)
        except ValueError:
            continue  # written by another version: left out rather than failing the page
        tasks.append(
            HeldTask(
                str(queue),
                str(task_id),
                str(doc.get("type", "")),
                str(doc.get("outcome", "")),
                str(doc.get("detail", "")),
                from_ms(doc.get("at")),
            )
        )
    return sorted(tasks, key=lambda t: (t.at is None, t.at or datetime.min, t.queue, t.id))


def server_record(fields: dict[bytes, bytes]) -> ServerRecord | None:
    """The record in an ended server's hash, or None when it has none (expired, or only a task noted)."""
    raw = fields.get(SERVER_FIELD.encode())
    if not raw:
        return None
    try:
        doc = json.loads(raw)
        server = server_info(doc, [])
    except (ValueError, TypeError, KeyError):
        return None
    return ServerRecord(
        server, str(doc.get("how", "")), str(doc.get("reason", "")), from_ms(doc.get("ended")), held_tasks(fields)
    )
