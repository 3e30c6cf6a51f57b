"""The heartbeat: extends the leases of the tasks this worker runs, and publishes the server and its running
tasks (with a TTL, so a crashed server disappears from the console on its own). It also acts on an operator's
quiet or stop: the subscriber hands it the request the moment it is published, and each round reads the stored
request too, in case the subscriber was not listening then.

Each round first reads the keyspace's layout stamp (``layout``, see ``layout_guard``): when ``tasks migrate-keys``
moved the keyspace on while this worker runs, the round writes nothing and the server stops.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.server_records import SERVER_ACTIONS
from taskq.queues.engine.worker_store import WorkerStore

from .component import Component
from .config import WorkerConfig
from .layout_guard import LayoutGuard
from .process_usage import ProcessUsage
from .processor import Processor
from .supervisor import supervised_index


class Heartbeat(Component):
    name = "heartbeat"

    def __init__(
        self,
        broker: Broker,
        store: WorkerStore,
        config: WorkerConfig,
        processor: Processor,
        layout: LayoutGuard | None = None,
        on_stop: Callable[[], None] | None = None,
        counts: Any = None,
    ) -> None:
        super().__init__(config.heartbeat_every)
        self.queues = processor.queues  # what it publishes is what the processor serves
        self.broker = broker
        self.store = store
        self.config = config
        self.processor = processor
        self.started = broker.clock.now()
        # "active", "quiet" or "stopping": the subscriber's thread (obey), this one and the main thread (when the
        # server stops) change it, each under _obeying; server_info reads it whole (a str reference).
        self.status = "active"
        self.layout = layout
        self.last_beat: float | None = None  # clock time of the last heartbeat that reached Redis
        self.on_stop = on_stop  # asks the process to shut down gracefully (an operator's stop)
        self.counts = counts  # what counts attempts processed and failed since start (the acker), for server_info
        self.acked: str | None = None  # the operator's last request this server acted on and acknowledged
        self.stopped_by_operator = False
        self._obeying = threading.Lock()  # the subscriber's thread and this one may both hand over a request
        self.usage = ProcessUsage()  # RSS and CPU share since the last heartbeat, for the servers page

    @property
    def ttl(self) -> float:
        """How long a heartbeat counts: three rounds, so one slow or lost round does not drop the server."""
        return self.interval * 3

    def run_once(self) -> None:
        if self.layout is not None and not self.layout.check():
            return
        self.extend_leases()
        self.obey(self.store.control(self.config.server_id))
        self.publish()
        self.last_beat = self.broker.clock.now()

    def publish(self) -> None:
        """Write the server and what it runs to the registry (kept past its TTL for the record of a lost server)."""
        keep = self.config.server_record_seconds
        self.store.write_server(self.server_info(), self.processor.running(), ttl=self.ttl, keep=keep)

    def obey(self, request: str | None) -> None:
        """Apply an operator's request (``Inspector.control_server``): quiet stops fetching for good (and gives
        back what was fetched ahead), stop asks the process to shut down gracefully (it quiets first, so nothing
        new starts meanwhile). Then publish the new status and acknowledge, in that order, so whoever sees the
        acknowledgement reads the new status too. A request acted on already is not acknowledged again (the
        stored one is read every round for an hour)."""
        if request not in SERVER_ACTIONS or request == self.acked or self.acked == "stop":
            return
        with self._obeying:
            if self.status == "active":
                self.log.info("an operator quieted this worker: it fetches no more tasks and finishes what it runs")
                self.processor.quiet()
                self.status = "quiet"
            if request == "stop" and self.status != "stopping" and self.on_stop is not None:
                self.log.info("an operator stopped this worker: shutting down gracefully")
                self.status, self.stopped_by_operator = "stopping", True
                self.on_stop()
        self.publish()
        self.store.acknowledge(self.config.server_id, request)
        self.acked = request

    def announce_stopping(self) -> None:
        """The server is shutting down: the next heartbeats say so (the console shows it as stopping)."""
        with self._obeying:
            self.status = "stopping"

    def extend_leases(self) -> None:
        by_queue: dict[str, list[Any]] = defaultdict(list)
        for attempt in self.processor.snapshot():
            if not attempt.claimed:
                by_queue[attempt.queue].append(attempt)
        for queue, attempts in by_queue.items():
            until = self.broker.clock.now() + self.config.lease_seconds
            lost = set(
                self.broker.run(
                    self.broker.transitions.extend_leases(
                        queue, [(a.id, a.token) for a in attempts], self.config.lease_seconds
                    )
                )
            )
            for attempt in attempts:
                if attempt.id in lost:
                    self.processor.lease_lost(attempt)
                else:
                    attempt.lease_until = until
                    attempt.lease_confirmed = time.monotonic()

    def server_info(self) -> dict[str, Any]:
        return {
            "id": self.config.server_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": to_ms(self.started),
            "status": self.status,
            "queues": self.queues.weights(),
            "patterns": list(self.config.queue_patterns),  # so the console counts a queue a pattern matches as read
            "strict": self.config.strict,
            "concurrency": self.config.concurrency,
            "pool": self.config.pool,
            "prefetch": self.config.prefetch,
            "process_index": supervised_index(),
            "processed": getattr(self.counts, "processed", 0),
            "failed": getattr(self.counts, "failed", 0),
            "active_count": self.processor.capacity.busy,
            "heartbeat": to_ms(self.broker.clock.now()),
            "heartbeat_every": self.interval,  # so the console can tell a late heartbeat from a current one
            **self.usage.sample(),
        }

    def stop(self, timeout: float = 5.0, record: dict[str, Any] | None = None) -> None:
        """Stop beating and deregister the server, leaving ``record`` (how it ended, its tasks) in its place."""
        super().stop(timeout)
        try:
            self.store.clear_server(self.config.server_id, record, keep=self.config.server_record_seconds)
        except Exception as exc:  # the TTL removes it anyway, and the recoverer records it as lost
            self.log.info("could not deregister the server: %s", exc)
