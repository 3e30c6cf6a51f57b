"""The child side of the process pool (``taskworker --pool process``): a process that only runs handler code.

It never talks to Redis. The parent sends it one task at a time over a pipe and owns everything else (the lease,
heartbeats, the acknowledgement), so fencing is exactly that of the thread pool. ``write_result`` and
``progress`` inside the child go to the parent over the same pipe and are written there with the attempt's lease
token; a refusal (the lease was lost) is raised back in the child as the same ``LeaseLostError``.

Messages, child to parent: ``("ready", pid)`` or ``("broken", traceback)`` once at start; per task any number of
``("write", field, value)`` (each answered ``("ok", None)`` or ``("error", exception)``), then ``("done",)`` or
``("failed", error_text, exception)``. Parent to child: ``(message, retried, handler_type, trace_carrier)`` per
task, ``None`` to exit.

``trace_carrier``: the W3C headers of the attempt's span, which the parent made (worker/attempt_tracing.py), or
None when nothing traces. The child makes that context current while the handler runs, so the handler's own spans
are children of the attempt's span; they are recorded only if the child has an SDK set up too (as the module that
registers the handlers can do, or ``opentelemetry-instrument``), since a process pool child shares nothing with the
worker but the pipe.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, contextmanager
from multiprocessing.connection import Connection
from typing import Any

from taskq.queues.engine import RetryWithoutFailure, SkipRetry, Task
from taskq.queues.engine.failures import capture
from taskq.queues.engine.handlers import Handler

from .attempt import describe
from .attempt_span import attached, detach
from .trace_logs import show_trace_ids

#: (module, qualified name) of a module-level object: how a child finds a handler or a middleware.
Ref = tuple[str, str]

#: The signal the parent sends to stop the task a child runs (timeout, deadline, cancel, lost lease, shutdown).
#: Not SIGTERM: a service manager that signals the whole process group (systemd's default) must reach only the
#: worker, which then shuts down gracefully and decides itself when its children stop.
STOP_SIGNAL = signal.SIGUSR1
STOPPED_EXIT_CODE = 75


class HandlerFailed(Exception):
    """Stands in for a handler's exception that cannot cross a process boundary (it does not pickle)."""


def portable(exc: BaseException) -> BaseException:
    """``exc`` itself when it survives pickling (so retry_delay and the acker see the real class), else a stand-in
    that keeps what decides the outcome: SkipRetry, RetryWithoutFailure and its ``delay``."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # any class whose constructor does not take its own args back
        pass
    stand_in: BaseException
    if isinstance(exc, SkipRetry):
        stand_in = SkipRetry(str(exc))
    elif isinstance(exc, RetryWithoutFailure):
        stand_in = RetryWithoutFailure(str(exc))
        stand_in.delay = getattr(exc, "delay", 0)  # type: ignore[attr-defined]
    else:
        stand_in = HandlerFailed(describe(exc))
    return stand_in


def resolve(ref: Ref) -> Any:
    """Import ``ref``'s module and walk its qualified name."""
    module, qualname = ref
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def handler_function(ref: Ref) -> Callable[[Task], Any]:
    found = resolve(ref)
    # ``@handler`` leaves a Handler under the function's name; a function added by hand is found as itself.
    return found.func if isinstance(found, Handler) else found


def middleware_factory(ref: Ref) -> Callable[[Task], AbstractContextManager[None]]:
    found = resolve(ref)
    # ``Registry.use`` keeps the generator function under its name and registers contextmanager(it).
    return contextmanager(found) if inspect.isgeneratorfunction(found) else found


class ParentWriter:
    """``task.write_result`` and ``task.progress`` in a child: a round trip to the parent, which writes them
    fenced by the lease. A lock, because a handler may write from threads of its own."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self._lock = threading.Lock()

    def write(self, field: str, value: bytes) -> None:
        with self._lock:
            self.pipe.send(("write", field, value))
            status, error = self.pipe.recv()
        if status == "error":
            raise error


class ChildRunner:
    def __init__(
        self,
        pipe: Connection,
        handlers: dict[str, Callable[[Task], Any]],
        middleware: list[Callable[[Task], AbstractContextManager[None]]],
    ) -> None:
        self.pipe = pipe
        self.handlers = handlers
        self.middleware = middleware
        self.writer = ParentWriter(pipe)
        self.current: Task | None = None

    def serve(self) -> None:
        while True:
            try:
                job = self.pipe.recv()
            except (EOFError, OSError):  # the parent is gone
                return
            if job is None:
                return
            message, retried, handler_type, carrier = job
            self.current = Task(message, retried, self.writer)
            token = attached(carrier)
            try:
                reply = self.run(self.handlers[handler_type], self.current)
            finally:
                detach(token)
            self.current = None
            self.pipe.send(reply)

    def run(self, func: Callable[[Task], Any], task: Task) -> tuple[Any, ...]:
        try:
            with ExitStack() as stack:
                for middleware in self.middleware:
                    stack.enter_context(middleware(task))
                result = func(task)
                if inspect.iscoroutine(result):  # an async handler gets an event loop of its own per task
                    asyncio.run(result)
        except Exception as exc:  # the traceback is captured here: it does not cross the pipe with the exception
            return ("failed", describe(exc), portable(exc), capture(exc, func))
        return ("done",)

    def on_stop_signal(self, _signum: int, _frame: Any) -> None:
        """The parent ended the attempt: run the task's on_cancel callbacks (they stop work a kill would leave
        behind, such as a subprocess), then exit at once. The parent kills us if this does not finish in time."""
        if self.current is not None:
            self.current.cancel()
        os._exit(STOPPED_EXIT_CODE)


def watch_parent() -> None:
    """Exit when the worker dies (even by SIGKILL) though a handler is still running: its task is held by the
    worker's lease, which the recoverer of some worker takes back. ``parent_process()`` is the worker also under
    the forkserver, and its sentinel becomes ready when the worker is gone."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def child_main(pipe: Connection, handlers: dict[str, Ref], middleware: list[Ref]) -> None:
    """Entry point of a handler process."""
    # Ctrl-C and a group-wide SIGTERM reach the worker, which decides when its children stop (see STOP_SIGNAL).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        importlib.import_module("taskq.worker.process_boot")
        if not logging.getLogger().handlers:  # no Django to configure it: log like the taskworker command does
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        show_trace_ids()
        runner = ChildRunner(
            pipe,
            {kind: handler_function(ref) for kind, ref in handlers.items()},
            [middleware_factory(ref) for ref in middleware],
        )
    except BaseException:  # whatever broke the start is reported to the parent, which fails loudly
        pipe.send(("broken", traceback.format_exc()))
        return
    signal.signal(STOP_SIGNAL, runner.on_stop_signal)
    watch_parent()
    pipe.send(("ready", os.getpid()))
    runner.serve()
