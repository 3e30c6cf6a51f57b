"""The recoverer: tasks whose lease ran out (their worker crashed, hung, or lost Redis) go to retry, or to
the archive when their retries are spent, with the error "lease expired". A lease is left alone for a clock
skew allowance past its expiry, and the transition re-checks the expiry inside the script, so a heartbeat
that extends the lease in the meantime wins.

It also keeps the record of servers that ended without a graceful exit: each round first records the servers whose
heartbeat ran out (``WorkerStore.record_lost_servers``), then adds each task it recovers to the record of the
server whose lease it was (the lease token starts with the server's id)."""

from __future__ import annotations

from collections.abc import Callable

from taskq.queues.engine import Registry, TaskMessage, default_retry_delay
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.clock import to_ms
from taskq.queues.engine.handlers import Task
from taskq.queues.engine.transitions import ArchiveLimits, Leased
from taskq.queues.engine.worker_store import WorkerStore

from .component import Component
from .config import WorkerConfig
from .queueset import QueueSet

BATCH = 100
MAX_BATCHES = 10
LEASE_EXPIRED = "lease expired: the worker running the task stopped or lost contact with Redis"


class Recoverer(Component):
    name = "recoverer"

    def __init__(
        self,
        broker: Broker,
        store: WorkerStore,
        config: WorkerConfig,
        registry: Registry,
        queues: QueueSet | None = None,
        archive_limits: Callable[[str], ArchiveLimits] | None = None,
    ) -> None:
        super().__init__(config.recoverer_every)
        self.broker = broker
        self.store = store
        self.config = config
        self.registry = registry
        self.queues = queues or QueueSet(config.queues)
        self.archive_limits = archive_limits or (lambda _queue: ArchiveLimits())
        self.recovered = 0

    def run_once(self) -> None:
        for server_id in self.store.record_lost_servers(self.config.server_record_seconds):
            self.log.warning("server %s is lost: its heartbeat ran out without a graceful exit", server_id)
        for queue in self.queues.names():
            # A full batch means more may be waiting; the bound keeps one round from running forever.
            for _ in range(MAX_BATCHES):
                if self._recover(queue) < BATCH:
                    break

    def _recover(self, queue: str) -> int:
        now = self.broker.clock.now()
        cutoff = now - self.config.skew
        expired = self.store.expired_leases(queue, cutoff, BATCH)
        ops = self.broker.transitions
        for leased in expired:
            if not leased.token and not leased.type:  # the task hash is gone: nothing to retry
                self.broker.run_unless_raced(ops.drop_lease(queue, leased.id))
                continue
            try:
                message = TaskMessage.decode(leased.id, queue, leased.type, leased.payload, leased.options)
                retry = leased.retried < message.max_retry
            except (ValueError, TypeError, UnicodeDecodeError):
                message, retry = None, False
            if retry and message is not None:
                handler = self.registry.route(message.type)
                task = Task(message, leased.retried)
                error = TimeoutError(LEASE_EXPIRED)
                delay = (handler.retry_delay if handler else default_retry_delay)(leased.retried, error, task)
                call = ops.retry(
                    queue,
                    leased.id,
                    leased.token,
                    now + delay,
                    LEASE_EXPIRED,
                    worker=self.config.server_id,
                    expired_before=cutoff,
                )
            else:
                call = ops.archive(
                    queue,
                    leased.id,
                    leased.token,
                    LEASE_EXPIRED,
                    worker=self.config.server_id,
                    expired_before=cutoff,
                    archive_limits=self.archive_limits(queue),
                )
            if self.broker.run_unless_raced(call):
                self.recovered += 1
                self._note(queue, leased, message, "to retry" if retry else "archived: its retries are spent")
                self.log.warning(
                    "task %s in %s: %s; sent to %s",
                    leased.id,
                    queue,
                    LEASE_EXPIRED,
                    "retry" if retry else "the archive",
                )
        return len(expired)

    def _note(self, queue: str, leased: Leased, message: TaskMessage | None, detail: str) -> None:
        """Add the task to the record of the server that held it. A lease token is ``<server id>:<call>:<n>``
        (see ``Processor._dequeue``); one of another shape (the HTTP API's) names no server."""
        server_id, calls, _ = leased.token.rsplit(":", 2) if leased.token.count(":") >= 2 else ("", "", "")
        if not server_id or not calls.isdigit():
            return
        task = {
            "queue": queue,
            "id": leased.id,
            "type": message.type if message is not None else leased.type.decode(errors="replace"),
            "outcome": "recovered",
            "detail": detail,
            "at": to_ms(self.broker.clock.now()),
        }
        self.store.note_recovered(server_id, task, self.config.server_record_seconds)
