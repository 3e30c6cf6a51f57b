"""Small periodic components: the forwarder (due scheduled and retry tasks to pending), the janitor (completed
tasks past their retention), and the watchdog (timeouts and deadlines of running attempts)."""

from __future__ import annotations

from collections.abc import Callable

from queues.engine import TaskCancelledError
from queues.engine.broker import Broker
from queues.engine.transitions import PERIODIC_LIMIT, Call

from .component import Component
from .processor import Processor
from .queueset import QueueSet


class Sweeper(Component):
    """Repeats chunked maintenance transitions over each queue until a call moves less than a full chunk.

    The forwarder moves due scheduled and retry tasks to pending; the janitor deletes completed tasks whose
    retention has passed. Each call is built afresh so it carries the clock's time of that moment.
    """

    def __init__(self, name: str, broker: Broker, queues: QueueSet, interval: float,
                 calls: Callable[[str], list[Callable[[], Call]]]) -> None:
        super().__init__(interval)
        self.name = name
        self.broker, self.queues, self.calls = broker, queues, calls

    def run_once(self) -> None:
        for queue in self.queues.names():
            for build in self.calls(queue):
                while self.broker.run(build()) == PERIODIC_LIMIT:
                    pass


def forwarder(broker: Broker, queues: QueueSet, interval: float, actor: str) -> Sweeper:
    ops = broker.transitions
    return Sweeper("forwarder", broker, queues, interval, lambda q: [
        lambda: ops.forward(q, "scheduled", actor), lambda: ops.forward(q, "retry", actor)])


def janitor(broker: Broker, queues: QueueSet, interval: float, actor: str) -> Sweeper:
    ops = broker.transitions
    return Sweeper("janitor", broker, queues, interval, lambda q: [lambda: ops.delete_expired(q, actor)])


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
                self.processor.interrupt(attempt, TaskCancelledError(reason))
