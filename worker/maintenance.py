"""Small periodic components: the forwarder (due scheduled and retry tasks to pending), the janitor (completed
tasks past their retention), and the watchdog (timeouts and deadlines of running attempts)."""

from __future__ import annotations

from queues.engine import TaskCancelledError
from queues.engine.broker import Broker
from queues.engine.transitions import PERIODIC_LIMIT

from .component import Component
from .processor import Processor


class Forwarder(Component):
    name = "forwarder"

    def __init__(self, broker: Broker, queues: list[str], interval: float, actor: str) -> None:
        super().__init__(interval)
        self.broker, self.queues, self.actor = broker, queues, actor

    def run_once(self) -> None:
        for queue in self.queues:
            for state in ("scheduled", "retry"):
                while self.broker.run(self.broker.transitions.forward(queue, state, self.actor)) == PERIODIC_LIMIT:
                    pass


class Janitor(Component):
    name = "janitor"

    def __init__(self, broker: Broker, queues: list[str], interval: float, actor: str) -> None:
        super().__init__(interval)
        self.broker, self.queues, self.actor = broker, queues, actor

    def run_once(self) -> None:
        for queue in self.queues:
            while self.broker.run(self.broker.transitions.delete_expired(queue, self.actor)) == PERIODIC_LIMIT:
                pass


class Watchdog(Component):
    """Ends attempts that passed their timeout or deadline: async handlers are cancelled, sync handlers see
    ``task.cancelled`` and their result is discarded; the task goes to retry (or the archive) at once."""

    name = "watchdog"

    def __init__(self, processor: Processor, interval: float = 0.05) -> None:
        super().__init__(interval)
        self.processor = processor

    def run_once(self) -> None:
        now = self.processor.clock.now()
        for attempt in self.processor.snapshot():
            if attempt.deadline is not None and now >= attempt.deadline and not attempt.claimed:
                message = attempt.task.message
                reason = ("deadline exceeded" if message.deadline_ms and now * 1000 >= message.deadline_ms
                          else f"timed out after {message.effective_timeout():g} s")
                self.processor.interrupt(attempt.id, TaskCancelledError(reason))
