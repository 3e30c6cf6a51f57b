"""Listens on Redis pub/sub for operator cancellations and for the wake-ups that tell an idle processor a
queue has work. One connection, one thread; it reconnects after an outage (redis-py re-subscribes)."""

from __future__ import annotations

import logging

import redis

from queues.engine import RedisUnavailableError
from queues.engine.keys import cancel_request
from queues.engine.worker_store import WorkerStore

from .component import Component
from .processor import Processor

log = logging.getLogger("worker.subscriber")


class Subscriber(Component):
    name = "subscriber"

    def __init__(self, store: WorkerStore, queues: list[str], processor: Processor) -> None:
        super().__init__(interval=0.0)
        self.store, self.queues, self.processor = store, queues, processor
        self._pubsub: redis.client.PubSub | None = None
        self._cancel_channel = b""

    def run_once(self) -> None:
        if self._pubsub is None:
            pubsub, channel = self.store.subscribe(self.queues)
            self._pubsub, self._cancel_channel = pubsub, channel.encode()
            # Work may have arrived while we were not listening.
            self.processor.wake.set()
        try:
            message = self._pubsub.get_message(timeout=0.5)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            self._pubsub.close()
            self._pubsub = None
            raise RedisUnavailableError(str(exc), op="worker.subscriber") from exc
        if message is None or message.get("type") != "message":
            return
        if message["channel"] == self._cancel_channel:
            queue, task_id = cancel_request(message["data"])
            if self.processor.cancel(queue, task_id):
                log.info("task %s in %s cancelled by an operator", task_id, queue)
        else:
            self.processor.wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self._pubsub is not None:
            self._pubsub.close()
