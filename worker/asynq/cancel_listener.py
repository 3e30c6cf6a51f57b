"""Listens on ``asynq:cancel``, where asynq's Inspector (and taskq's console) publishes the id of a task to
cancel, and cancels that task if this worker runs it. One connection, one thread; after an outage it subscribes
again."""

from __future__ import annotations

from taskq.queues.engine import RedisUnavailableError
from taskq.queues.engine.asynq.worker_store import AsynqWorkerStore
from taskq.queues.engine.broker import Subscription
from taskq.worker.component import Component

from .task_runner import TaskRunner


class CancelListener(Component):
    name = "asynq-cancel"

    def __init__(self, store: AsynqWorkerStore, runner: TaskRunner) -> None:
        super().__init__(interval=0.0)
        self.store, self.runner = store, runner
        self._subscription: Subscription | None = None  # only this component's thread touches it

    def run_once(self) -> None:
        if self._subscription is None:
            self._subscription = self.store.cancellations()
        try:
            message = self._subscription.get_message(timeout=0.5)
        except RedisUnavailableError:
            self._subscription.close()
            self._subscription = None
            raise
        if message is not None and message.get("type") == "message":
            data = message["data"]
            self.runner.cancel(data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data))

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self._subscription is not None:
            self._subscription.close()
