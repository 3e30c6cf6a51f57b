"""The asynq worker's heartbeat (asynq's heartbeat.go): every beat it extends the leases of the running tasks and
writes the server's ``ServerInfo`` and one ``WorkerInfo`` per running task, with a TTL of two beats, so Go's
Inspector, asynq's CLI and asynqmon list this Python server and what it runs. A task whose lease ran out before
the beat could extend it is stopped (it belongs to the recoverer now). The server's keys are cleared on exit.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from taskq.queues.engine.asynq.wire import Timestamp, WireServer, WireWorker
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.clock import Clock
from taskq.worker.component import Component

from .task_runner import AsynqAttempt, TaskRunner
from .timings import Timings

#: The states asynq's server reports (server.go): serving, or shutting down.
ACTIVE = "active"
CLOSED = "closed"


@dataclass(frozen=True)
class Identity:
    """Who this server is in asynq's registry: its host, its process and an id of its own (a UUID, as Go's)."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    server_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def fields(self) -> tuple[str, int, str]:
        """Host, pid and server id: the first three fields of both ServerInfo and WorkerInfo."""
        return self.host, self.pid, self.server_id


def timestamp(seconds: float) -> Timestamp:
    return Timestamp.of(datetime.fromtimestamp(seconds, UTC))


class ServerHeartbeat(Component):
    name = "asynq-heartbeat"

    def __init__(
        self,
        store: AsynqWorkerStore,
        runner: TaskRunner,
        identity: Identity,
        queues: dict[str, int],
        strict: bool,
        concurrency: int,
        timings: Timings,
        clock: Clock,
    ) -> None:
        super().__init__(timings.heartbeat)
        self.store, self.runner, self.identity = store, runner, identity
        self.queues, self.strict, self.concurrency = dict(queues), strict, concurrency
        self.timings, self.clock = timings, clock
        self.started = clock.now()
        self._status_lock = threading.Lock()
        self._status = ACTIVE  # set by the thread that stops the server, read by each beat: guarded

    @property
    def status(self) -> str:
        with self._status_lock:
            return self._status

    def closing(self) -> None:
        """The server shuts down: the next beats say so, as Go's do."""
        with self._status_lock:
            self._status = CLOSED

    def server_info(self, active: int) -> WireServer:
        return WireServer(
            *self.identity.fields,
            concurrency=self.concurrency,
            queues=self.queues,
            strict_priority=self.strict,
            status=self.status,
            start_time=timestamp(self.started),
            active_worker_count=active,
        )

    def worker_info(self, attempt: AsynqAttempt) -> WireWorker:
        return WireWorker(
            *self.identity.fields,
            task_id=attempt.id,
            task_type=attempt.message.type,
            task_payload=attempt.message.payload,
            queue=attempt.queue,
            start_time=timestamp(attempt.started),
            deadline=timestamp(attempt.deadline) if attempt.deadline is not None else None,
        )

    def run_once(self) -> None:
        running = self.runner.snapshot()
        workers = [self.worker_info(a) for a in running]
        self.store.write_server_state(self.server_info(len(workers)), workers, self.timings.server_ttl)
        self.extend(running)

    def extend(self, running: list[AsynqAttempt]) -> None:
        """Extend the leases still valid, queue by queue; stop the attempts whose lease ran out first."""
        now = self.clock.now()
        by_queue: dict[str, list[AsynqAttempt]] = defaultdict(list)
        for attempt in running:
            if attempt.lease_until >= now:
                by_queue[attempt.queue].append(attempt)
            else:
                self.runner.lease_expired(attempt)
        for queue, attempts in by_queue.items():
            expires = self.store.extend_leases(queue, [a.id for a in attempts], self.timings.lease)
            for attempt in attempts:
                # Written by this thread only, read by the handler threads before they write an outcome: a float
                # store is whole, and a reader that sees the older expiry only skips a write the recoverer makes.
                attempt.lease_until = max(attempt.lease_until, expires)

    def clear(self) -> None:
        """Remove this server's keys (the last thing a stopping server does)."""
        self.store.clear_server_state(self.identity.host, self.identity.pid, self.identity.server_id)
