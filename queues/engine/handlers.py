"""The handler API: ``@handler("email:deliver")`` registers a function (plain or ``async def``) that takes one
``Task``. Workers route each task to the handler whose type is the longest prefix of the task's type.

Per-handler defaults apply when enqueuing through the handler itself (``deliver.enqueue(payload)``), the
function-style API, and to workflow members (``sig("deliver")``: see ``member_defaults``) unless the member gives
its own; ``client.enqueue(type, ...)`` takes only what it is given.
"""

from __future__ import annotations

import inspect
import json
import logging
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import process_defaults
from .clock import from_ms
from .errors import ValidationError
from .message import TaskInfo, TaskMessage
from .process_defaults import Enqueuer
from .quoting import shown
from .type_routes import TypeRoutes
from .validation import task_type as check_type

RetryDelay = Callable[[int, BaseException, "Task"], float]

Middleware = Callable[["Task"], AbstractContextManager[None]]


def default_retry_delay(retried: int, error: BaseException, task: Task) -> float:
    """Sidekiq's backoff, as asynq uses it: n^4 + 15 + rand(30) * (n + 1) seconds after the n-th retry."""
    return retried**4 + 15 + random.randrange(30) * (retried + 1)


# One lock for every task's cancel callbacks: registering and cancelling are rare, and a lock (or an Event) of
# each task's own cost every task an allocation on the worker's hot path.
_CALLBACKS_LOCK = threading.Lock()


class Task:
    """What a handler receives. ``write_result`` and ``progress`` write to the task while the attempt holds its
    lease; ``cancelled`` turns true when the task is cancelled, times out or passes its deadline (sync handlers
    should check it in long loops: a thread cannot be stopped from outside)."""

    def __init__(
        self, message: TaskMessage, retried: int, attempt: Any = None, worker_id: str = "", *, inline: bool = False
    ) -> None:
        self._message = message
        self.retried = retried
        self._attempt = attempt
        #: The id of the worker server running this attempt ("" outside a worker).
        self.worker_id = worker_id
        #: Whether the attempt runs in the caller's thread (eager mode): the task is in no Redis, so a handler
        #: cannot read it back, and what it writes stays with the attempt.
        self.inline = inline
        self._cancelled = False
        self._on_cancel: list[Callable[[], None]] = []
        #: The worker's SparkSession, for handlers registered with ``spark=True`` (None otherwise).
        self.spark: Any = None

    id = property(lambda self: self._message.id)
    type = property(lambda self: self._message.type)
    payload = property(lambda self: self._message.payload)
    queue = property(lambda self: self._message.queue)
    max_retry = property(lambda self: self._message.max_retry)
    headers = property(lambda self: self._message.headers)
    #: The results of the tasks this one waited for (a chain's previous step, a chord's header), when it asked.
    results = property(lambda self: self._message.results)
    #: For a workflow's on_error callback: {"task", "type", "error"} of the member that failed it.
    failure = property(lambda self: self._message.failure)

    @property
    def deadline(self) -> datetime | None:
        return from_ms(self._message.deadline_ms)

    @property
    def message(self) -> TaskMessage:
        return self._message

    def json(self) -> Any:
        return json.loads(self.payload)

    def write_result(self, data: bytes | Any) -> None:
        """Store the result (bytes, or any JSON-serializable value) on the task."""
        if not isinstance(data, (bytes, bytearray)):
            data = json.dumps(data, separators=(",", ":")).encode()
        if self._attempt is not None:
            self._attempt.write("result", bytes(data))

    def write_journal(self, data: Any) -> None:
        """Store a JSON document on the task that outlives the attempt (``TaskInfo.journal``), replacing the one
        before: what a handler keeps about its own attempts (the Django tasks backend keeps each attempt's
        worker, start and error there). Fenced by the lease, as ``write_result`` is."""
        if self._attempt is not None:
            self._attempt.write("journal", json.dumps(data, separators=(",", ":")).encode())

    def progress(self, done: int, total: int) -> None:
        if self._attempt is not None:
            self._attempt.write("progress", f"{int(done)}/{int(total)}".encode())

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Called by the worker (from another thread); handlers read ``cancelled``, and every callback given to
        ``on_cancel`` runs once, here."""
        with _CALLBACKS_LOCK:
            self._cancelled = True
            callbacks, self._on_cancel = self._on_cancel, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one broken callback must not keep the others (or the worker) from stopping
                logging.getLogger("taskq.queues.engine").exception("task %s: cancel callback failed", self.id)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the task is cancelled, timed out or past its deadline, from the thread that ends
        it: the way to stop work a flag cannot reach (a Spark job, a subprocess). Runs at once when the task is
        cancelled already. Returns a function that unregisters it."""
        with _CALLBACKS_LOCK:
            cancelled = self._cancelled
            if not cancelled:
                self._on_cancel.append(callback)
        if cancelled:
            callback()

        def remove() -> None:
            with _CALLBACKS_LOCK:
                if callback in self._on_cancel:
                    self._on_cancel.remove(callback)

        return remove

    def __repr__(self) -> str:
        return f"<Task {self.type} {self.id} in {self.queue}>"


@dataclass
class Handler:
    type: str
    func: Callable[[Task], Any]
    defaults: dict[str, Any] = field(default_factory=dict)
    retry_delay: RetryDelay = default_retry_delay
    spark: bool = False  # the worker hands it its SparkSession as ``task.spark`` and tags its Spark jobs
    #: Runs in the worker process itself, on its threads or event loop, also under ``--pool process``: for a
    #: handler that reads the task back through the worker's own connection (a child process has none).
    in_worker: bool = False

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    def __call__(self, task: Task) -> Any:
        return self.func(task)

    def enqueue(self, payload: Any = b"", *, client: Enqueuer | None = None, **overrides: Any) -> TaskInfo:
        """Enqueue a task for this handler, its defaults under the caller's ``overrides``, with ``client`` or the
        process's default client (``taskq.queues.engine.default_client``)."""
        if client is None:
            client = process_defaults.default_enqueuer()
        return client.enqueue(self.type, payload, **{**self.defaults, **overrides})


#: Finds a handler for a task type no registered handler routes, or returns None (see ``Registry.resolve_with``).
Resolver = Callable[[str], "Handler | None"]


class Registry(TypeRoutes[Handler]):
    """Handlers by type, and the middleware wrapped around every run."""

    def __init__(self) -> None:
        super().__init__()
        self.middleware: list[Middleware] = []
        self.resolvers: list[Resolver] = []

    def resolve_with(self, resolver: Resolver) -> Resolver:
        """Ask ``resolver`` for the handler of a type that no registered handler routes, after them: how a
        framework whose tasks name their own function (Django's ``@task``, see ``taskq.tasks_backend``) runs
        on a worker with no ``@handler`` for each. A resolver decides what it trusts; it must return None for a
        type it does not know rather than import arbitrary code. Registering the same resolver twice is a no-op."""
        with self._lock:
            if resolver not in self.resolvers:
                self.resolvers.append(resolver)
        return resolver

    def route(self, task_type: str) -> Handler | None:
        found = super().route(task_type)
        if found is not None:
            return found
        for resolver in tuple(self.resolvers):
            found = resolver(task_type)
            if found is not None:
                return found
        return None

    def use(self, middleware: Callable[[Task], Iterator[None]]) -> Callable[[Task], Iterator[None]]:
        """Register a generator middleware: code before ``yield`` runs before the handler, code after it when
        the handler returns; the handler's exception is raised at the ``yield``."""
        self.middleware.append(contextmanager(middleware))
        return middleware

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.middleware.clear()
            # Resolvers stay: an app installs them once at start (taskq.queues.apps), not per test or module.


#: The registry ``@handler`` adds to by default; workers serve it.
registry = Registry()

_OPTION_DEFAULTS = ("queue", "max_retry", "timeout", "retention", "unique")
#: The handler defaults a workflow member takes: a member runs in its workflow's queue, and waiting for others
#: does not combine with uniqueness, so ``queue`` and ``unique`` stay the workflow's business.
MEMBER_DEFAULTS = ("max_retry", "timeout", "retention")


def member_defaults(routes: Registry, task_type: object) -> dict[str, Any]:
    """The options the handler of ``task_type`` (longest prefix, as a worker routes it) sets for a workflow member.

    A plain task enqueued through its handler (``parse.enqueue``) gets them; a member names only its type, so they
    are looked up here: without them ``sig("parse")`` under ``@handler("parse", max_retry=1)`` would take the
    engine's 25 retries, and its workflow would read "running" for days. The handler must be
    registered in the submitting process (imported, as the worker imports it)."""
    found = routes.route(task_type) if isinstance(task_type, str) else None
    if found is None:
        return {}
    return {name: found.defaults[name] for name in MEMBER_DEFAULTS if name in found.defaults}


def handler(
    task_type: str,
    *,
    queue: str | None = None,
    max_retry: int | None = None,
    timeout: float | None = None,
    retention: float | None = None,
    unique: float | None = None,
    retry_delay: RetryDelay | None = None,
    spark: bool = False,
    registry: Registry = registry,
) -> Callable[[Callable[[Task], Any]], Handler]:
    """Register the decorated function as the handler of ``task_type`` (and of types it is a prefix of).

    With ``spark=True`` the worker gives the handler its SparkSession as ``task.spark``, tags the task's Spark
    jobs with the task id, reports their progress, and cancels them on timeout, deadline or operator cancel.
    Spark handlers must be plain functions (a Spark action blocks its thread)."""
    check_type(task_type, "handler")
    given = dict(queue=queue, max_retry=max_retry, timeout=timeout, retention=retention, unique=unique)
    defaults = {name: given[name] for name in _OPTION_DEFAULTS if given[name] is not None}

    def register(func: Callable[[Task], Any]) -> Handler:
        if spark and inspect.iscoroutinefunction(func):
            raise ValidationError(
                f"Spark handler {shown(task_type)} must be a plain function, not async def", op="handler"
            )
        return registry.add(Handler(task_type, func, defaults, retry_delay or default_retry_delay, spark))

    return register
