"""The asynq worker's loops beside the handlers, each a component of its own (asynq's forwarder.go, janitor.go,
recoverer.go and syncer.go), plus the watch that ends handlers at their deadline:

- ``Forwarder``: due scheduled and retry tasks to pending (or into their group);
- ``Janitor``: completed tasks past their retention deleted, 100 per queue per round;
- ``Recoverer``: tasks whose lease expired more than the clock-skew allowance ago are retried with the error
  "asynq: task lease expired" after the retry delay, or archived when their retries are spent, as Go's recoverer
  does, whichever server (Go or Python) held them;
- ``Syncer``: writes Redis did not take, tried again until the lease they belong to runs out;
- ``DeadlineWatch``: the running tasks past their deadline, ended as Go's context ends them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from taskq.queues.engine import EngineError, RedisUnavailableError, Registry, Task, default_retry_delay
from taskq.queues.engine.asynq.wire import WireTask
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.clock import Clock
from taskq.worker.component import Component

from .task_runner import TaskRunner, task_message

#: The last error of a task recovered after its lease expired: Go's ErrLeaseExpired, word for word.
LEASE_EXPIRED = "asynq: task lease expired"
JANITOR_BATCH = 100  # asynq's janitor deletes this many expired completed tasks per queue per round
DEADLINE_WATCH_INTERVAL = 0.05


class LeaseExpired(Exception):
    """What a retry delay function is given for a task recovered after its lease expired."""


class QueueLoop(Component):
    """A loop over the served queues, through the store."""

    def __init__(self, store: AsynqWorkerStore, queues: list[str], interval: float) -> None:
        super().__init__(interval)
        self.store, self.queues = store, list(queues)


class Forwarder(QueueLoop):
    name = "asynq-forwarder"

    def run_once(self) -> None:
        self.store.forward(self.queues)


class Janitor(QueueLoop):
    name = "asynq-janitor"

    def run_once(self) -> None:
        for queue in self.queues:
            self.store.delete_expired_completed(queue, JANITOR_BATCH)


class Recoverer(QueueLoop):
    name = "asynq-recoverer"

    def __init__(
        self,
        store: AsynqWorkerStore,
        queues: list[str],
        registry: Registry,
        interval: float,
        clock_skew: float,
        clock: Clock,
    ) -> None:
        super().__init__(store, queues, interval)
        self.registry, self.clock_skew, self.clock = registry, clock_skew, clock

    def run_once(self) -> None:
        now = self.clock.now()
        for message in self.store.lease_expired(self.queues, now - self.clock_skew):
            try:
                if message.retried >= message.retry:
                    self.store.archive(message, LEASE_EXPIRED)
                else:
                    self.store.retry(message, now + self.delay(message), LEASE_EXPIRED, True)
            except RedisUnavailableError:
                raise
            except EngineError as exc:  # another recoverer, or the worker itself, got there first
                self.log.info("task %s: not recovered: %s", message.id, exc)
            else:
                self.log.info("task %s: lease expired, recovered", message.id)

    def delay(self, message: WireTask) -> float:
        """The retry delay of the task's handler, when this worker has one; asynq's default backoff otherwise."""
        handler = self.registry.route(message.type)
        task = Task(task_message(message), message.retried)
        if handler is None:
            return default_retry_delay(message.retried, LeaseExpired(LEASE_EXPIRED), task)
        try:
            return max(0.0, float(handler.retry_delay(message.retried, LeaseExpired(LEASE_EXPIRED), task)))
        except Exception:  # a broken delay function must not keep the task from being recovered
            self.log.exception("task %s: retry delay failed; asynq's default applies", message.id)
            return default_retry_delay(message.retried, LeaseExpired(LEASE_EXPIRED), task)


class Syncer(Component):
    """Writes Redis did not take (an outcome while Redis was away), each tried again every round until its
    deadline (the end of the lease it was written under), then left to the recoverer."""

    name = "asynq-syncer"

    def __init__(self, interval: float, clock: Clock) -> None:
        super().__init__(interval)
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: list[tuple[Callable[[], None], float, str]] = []  # guarded by _lock: any thread adds

    def add(self, write: Callable[[], None], deadline: float, what: str) -> None:
        with self._lock:
            self._pending.append((write, deadline, what))

    def run_once(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        now = self.clock.now()
        left = []
        for write, deadline, what in pending:
            if now > deadline:
                self.log.warning("%s: not written before the lease ran out; the recoverer takes it", what)
                continue
            try:
                write()
            except RedisUnavailableError:
                left.append((write, deadline, what))
            except EngineError as exc:
                self.log.warning("%s: not written: %s", what, exc)
        with self._lock:
            self._pending.extend(left)


class DeadlineWatch(Component):
    name = "asynq-deadlines"

    def __init__(self, runner: TaskRunner) -> None:
        super().__init__(DEADLINE_WATCH_INTERVAL)
        self.runner = runner

    def run_once(self) -> None:
        self.runner.expire_deadlines()
