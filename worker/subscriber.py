"""Listens on Redis pub/sub for operator cancellations, for an operator's quiet or stop of this server (handed
to ``on_control``: the heartbeat acts on it), and for the wake-ups that tell an idle processor a queue has work.
One connection, one thread; it reconnects after an outage (redis-py re-subscribes). With queue patterns
(``--queues 'tenant-*'``) it also listens to the wake-ups of every queue a pattern matches, and hands those of
queues not served yet to the pattern resolver (``patterns.py``) before waking the processor."""

from __future__ import annotations

from collections.abc import Callable

from taskq.queues.engine import RedisUnavailableError
from taskq.queues.engine.broker import Subscription
from taskq.queues.engine.keys import cancel_request
from taskq.queues.engine.worker_store import WorkerStore

from .component import Component
from .processor import Processor
from .queueset import QueueSet


class Subscriber(Component):
    name = "subscriber"

    def __init__(
        self,
        store: WorkerStore,
        queues: QueueSet,
        processor: Processor,
        patterns: list[str] | None = None,
        on_heard: Callable[[str], None] | None = None,
        server_id: str = "",
        on_control: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(interval=0.0)
        self.store, self.queues, self.processor = store, queues, processor
        self.patterns = list(patterns or [])
        self.on_heard = on_heard
        self.server_id, self.on_control = server_id, on_control
        self._control_channel = b""
        self._pubsub: Subscription | None = None  # only this component's thread touches it
        self._cancel_channel = b""
        self._listening: list[str] = []

    def run_once(self) -> None:
        if self._pubsub is None:
            self._listening = self.queues.names()
            pubsub, cancel, control = self.store.subscribe(self._listening, self.patterns, self.server_id)
            self._pubsub, self._cancel_channel, self._control_channel = pubsub, cancel.encode(), control.encode()
            # Work may have arrived while we were not listening.
            self.processor.wake.set()
        try:
            self._follow_queue_set(self._pubsub)  # the subscription raises the engine's errors itself
            message = self._pubsub.get_message(timeout=0.5)
        except RedisUnavailableError:
            self._pubsub.close()
            self._pubsub = None
            raise
        if message is None or message.get("type") not in ("message", "pmessage"):
            return
        if message["type"] == "pmessage":
            queue = self.store.keys.queue_of_pending(message["channel"].decode(errors="replace"))
            if queue is not None and self.on_heard is not None:
                self.on_heard(queue)
            self.processor.wake.set()
        elif message["channel"] == self._control_channel and self._control_channel:
            if self.on_control is not None:
                self.on_control(message["data"].decode(errors="replace"))
        elif message["channel"] == self._cancel_channel:
            queue, task_id = cancel_request(message["data"])
            if self.processor.cancel(queue, task_id):
                self.log.info("task %s in %s cancelled by an operator", task_id, queue)
        else:
            self.processor.wake.set()

    def _follow_queue_set(self, pubsub: Subscription) -> None:
        """Listen for wake-ups of the queues served now. Done on this thread: a PubSub is not thread-safe."""
        current = self.queues.names()
        if current == self._listening:
            return
        added = [q for q in current if q not in self._listening]
        removed = [q for q in self._listening if q not in current]
        self.store.resubscribe(pubsub, added, removed)
        self._listening = current

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self._pubsub is not None:
            self._pubsub.close()
