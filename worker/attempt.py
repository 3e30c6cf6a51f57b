"""One run of one task by this worker, and the outcome it ends with.

An attempt ends exactly once: the handler returning, the watchdog (timeout, deadline), an operator's cancel,
a lost lease, or shutdown may each try to end it, and only the first ``claim`` wins. The others find it
claimed and do nothing, so a timed-out handler that returns later cannot also acknowledge success.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taskq.queues.engine import RetryWithoutFailure, SkipRetry, Task, default_retry_delay
from taskq.queues.engine.failures import Failure, capture
from taskq.queues.engine.handlers import Handler
from taskq.queues.engine.transitions import Leased

if TYPE_CHECKING:
    from .attempt_span import AttemptSpan


@dataclass
class Outcome:
    kind: str  # "success", "retry", "archive", "requeue" or "drop" (lease lost: nothing to write)
    error: str = ""
    retry_at: float = 0.0
    is_failure: bool = True
    failure: Failure | None = None  # what the handler raised: traceback and error group (see failures.py)
    exception: BaseException | None = None  # the exception itself, for the attempt's span to record
    # What the attempt's span records as its outcome when the kind does not say it: "cancelled" for an operator's
    # cancel (which retries or archives like any failure).
    cause: str = ""


def describe(exc: BaseException) -> str:
    """A readable last error: the exception's class and message, not a traceback."""
    return Failure(type(exc).__name__, str(exc)).error


class Attempt:
    def __init__(
        self, leased: Leased, queue: str, task: Task, handler: Handler | None, deadline: float | None, started: float
    ) -> None:
        self.leased = leased
        self.queue = queue
        self.task = task
        self.handler = handler
        self.deadline = deadline  # epoch seconds by the engine clock, or None
        self.started = started
        self.began = time.monotonic()  # for run-time metrics, which must not follow an injected clock
        self.ran = 0.0  # seconds the handler ran, once it has returned (set by the processor)
        self.lease_until = 0.0  # when this worker's lease on the task runs out unless extended
        self.lease_confirmed = self.began  # when (monotonic) the lease was last taken or extended
        # Its handler slot was handed to the acker with its success, to be filled by fetch-on-ack (worker/acker.py).
        self.holds_slot = False
        self.ended_as = ""  # the kind of the outcome handed to the acker (for the record of a server that ends)
        #: Why the task's message could not be decoded ("" when it could): such an attempt runs no handler, and
        #: is archived with this as its error (see ``Processor._prepare``).
        self.undecodable = ""
        self.span: AttemptSpan | None = None  # its consumer span, while an SDK records (worker/attempt_tracing.py)
        self.future: Any = None  # the asyncio task of an async handler
        self.loop: Any = None
        # Holds one item until the attempt is claimed: list.pop is atomic, so of two threads claiming at once exactly
        # one gets the item, without a lock allocated, taken and released for each of the thousands of attempts a
        # second.
        self._unclaimed = [True]

    @property
    def id(self) -> str:
        return self.leased.id

    @property
    def token(self) -> str:
        return self.leased.token

    def claim(self) -> bool:
        try:
            return self._unclaimed.pop()
        except IndexError:
            return False

    @property
    def claimed(self) -> bool:
        return not self._unclaimed

    def interrupt(self) -> None:
        """Ask the handler to stop: async handlers are cancelled, sync ones see ``task.cancelled``."""
        self.task.cancel()
        if self.future is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self.future.cancel)

    def failure(self, exc: BaseException, now: float, captured: Failure | None = None) -> Outcome:
        """What a failed run leads to: archive when retries are spent or the handler says so, else retry.
        ``captured``: the failure as a handler process captured it (``exc`` crossed without its traceback)."""
        error = describe(exc)
        failure = captured or capture(exc, self.handler)
        if isinstance(exc, SkipRetry):
            return Outcome("archive", error, failure=failure, exception=exc)
        if isinstance(exc, RetryWithoutFailure):
            delay = float(getattr(exc, "delay", 0) or 0) or self._delay(exc)
            return Outcome("retry", error, retry_at=now + delay, is_failure=False, failure=failure, exception=exc)
        if self.task.retried >= self.task.max_retry:
            return Outcome("archive", error, failure=failure, exception=exc)
        return Outcome("retry", error, retry_at=now + self._delay(exc), failure=failure, exception=exc)

    def _delay(self, exc: BaseException) -> float:
        if self.handler is None:
            return default_retry_delay(self.task.retried, exc, self.task)
        try:
            return max(0.0, float(self.handler.retry_delay(self.task.retried, exc, self.task)))
        except Exception:  # a broken delay function must not lose the task
            traceback.print_exc()
            return 60.0
