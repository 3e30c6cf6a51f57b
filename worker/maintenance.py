"""Small periodic components: the forwarder (due scheduled and retry tasks to pending), the janitor (completed
tasks past their retention), and the watchdog (timeouts, deadlines and unextended leases of running attempts)."""

from __future__ import annotations

import time
from collections.abc import Callable

from taskq.queues.engine import TaskCancelledError
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.transitions import PERIODIC_LIMIT, Call

from .attempt import Attempt
from .component import Component
from .processor import Processor
from .queueset import QueueSet


class Sweeper(Component):
    """Repeats chunked maintenance transitions over each queue until a call moves less than a full chunk.

    The forwarder moves due scheduled and retry tasks to pending; the janitor deletes completed tasks whose
    retention has passed. Each call is built afresh so it carries the clock's time of that moment.
    """

    def __init__(
        self,
        name: str,
        broker: Broker,
        queues: QueueSet,
        interval: float,
        calls: Callable[[str], list[Callable[[], Call]]],
    ) -> None:
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
    return Sweeper(
        "forwarder",
        broker,
        queues,
        interval,
        lambda q: [lambda: ops.forward(q, "scheduled", actor), lambda: ops.forward(q, "retry", actor)],
    )


def janitor(broker: Broker, queues: QueueSet, interval: float, actor: str) -> Sweeper:
    ops = broker.transitions
    return Sweeper("janitor", broker, queues, interval, lambda q: [lambda: ops.delete_expired(q, actor)])


class Watchdog(Component):
    """Ends attempts that passed their timeout or deadline: async handlers are cancelled, sync handlers see
    ``task.cancelled`` and their result is discarded; the task goes to retry (or the archive) at once.

    It also stops attempts whose lease ran out without being extended: this worker lost contact with Redis
    (a partition, a Redis restart), so the recoverer of another worker may already be handing the task out
    again. The heartbeat cannot do this itself, since it may be the thread stuck on the dead connection; the
    watchdog never talks to Redis. Nothing is written for such an attempt (asynq cancels the handler's context
    when its lease expires, for the same reason)."""

    name = "watchdog"

    def __init__(self, processor: Processor, interval: float = 0.05) -> None:
        super().__init__(interval)
        self.processor = processor

    def run_once(self) -> None:
        now = self.processor.clock.now()
        for attempt in self.processor.snapshot():
            if attempt.claimed:
                continue
            if attempt.deadline is not None and now >= attempt.deadline:
                message = attempt.task.message
                reason = (
                    "deadline exceeded"
                    if message.deadline_ms and now * 1000 >= message.deadline_ms
                    else f"timed out after {message.effective_timeout():g} s"
                )
                self.processor.interrupt(attempt, TaskCancelledError(reason))
            elif self._lease_ran_out(attempt, now):
                self.processor.lease_expired(attempt)

    def _lease_ran_out(self, attempt: Attempt, now: float) -> bool:
        # The lease is in engine time, which tests move by hand. Also requiring the heartbeat to have missed two
        # rounds (in real time) keeps a jump of the clock from stopping an attempt the next heartbeat extends.
        silent = time.monotonic() - attempt.lease_confirmed > 2 * self.processor.config.heartbeat_every
        return bool(attempt.lease_until) and now >= attempt.lease_until and silent
