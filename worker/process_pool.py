"""The process pool (``taskworker --pool process``): handlers run in child processes, for CPU-heavy handlers
(no GIL shared with the worker) and leaky ones (``--max-tasks-per-child``). A timeout, deadline, operator cancel,
lost lease or shutdown really stops the work: the child is stopped and replaced, which a thread cannot be.

The worker process keeps everything that touches Redis: it leases, heartbeats and acknowledges exactly as with
the thread pool, and writes ``write_result``/``progress`` for the child with the attempt's lease token (see
process_child.py). So fencing, outcomes and metrics are those of the other pools; only where the handler code
runs differs.

Children are started by a forkserver, not by fork: forking the worker itself would copy a process full of
threads (heartbeat, acker, Redis connections) in whatever state they are at that instant, the classic way to
get a child stuck on a lock nobody will release. The forkserver is a fresh single-threaded interpreter that
imports Django and the handler modules once (``set_forkserver_preload``) and forks each child from there, so a
replacement after a kill starts in milliseconds with the handlers already imported, and a child finds each
handler by importing its module (spawn's safety at nearly fork's speed). The cost: handlers must be defined at
module level of an importable module, which the pool checks at start; and, as with any multiprocessing
program, a script that starts a worker with this pool itself (not through manage.py) needs the
``if __name__ == "__main__":`` guard, because each child imports the script as ``__mp_main__``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from taskq.queues.engine import Registry, ValidationError
from taskq.queues.engine.failures import Failure
from taskq.queues.engine.quoting import shown

from .attempt import Attempt, Outcome
from .attempt_span import detach
from .process_child import STOP_SIGNAL, STOPPED_EXIT_CODE, Ref, child_main, portable

log = logging.getLogger("worker.processes")

STOP_GRACE = 2.0  # seconds a stopped child gets to run its task's on_cancel callbacks before SIGKILL
BOOT_TIMEOUT = 120.0  # the first start imports Django and every handler module in the forkserver
POLL = 0.25  # how often a slot waiting on its child checks whether a stop needs escalating to SIGKILL
WRITABLE = ("result", "progress", "journal")


class HandlerProcessDied(Exception):
    """The child running an attempt died before answering (segfault, os._exit, SIGKILL, out of memory)."""


class ProcessPoolError(RuntimeError):
    """A handler process could not start (a handler module failed to import in it)."""


def importable(obj: Any, what: str) -> Ref:
    """Where a child finds ``obj``: its module and qualified name, refused with a clear error when a fresh
    interpreter could not import it (defined inside a function, or in ``__main__``)."""
    target = getattr(obj, "__wrapped__", obj)
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or module == "__main__" or not qualname or "<locals>" in qualname:
        raise ValidationError(
            f"{what} ({module}.{qualname}) cannot run in a handler process: define it at the "
            f"top level of an importable module",
            op="taskworker --pool process",
        )
    return module, qualname


class ChildProcess:
    """One handler process and the worker's end of its pipe."""

    def __init__(self, context: Any, handlers: dict[str, Ref], middleware: list[Ref]) -> None:
        self.pipe, child_end = context.Pipe()
        self.process = context.Process(
            target=child_main, args=(child_end, handlers, middleware), name="taskq-handler", daemon=True
        )
        self.process.start()
        child_end.close()
        self.tasks = 0
        self._lock = threading.Lock()
        self._running: Attempt | None = None
        self._kill_at: float | None = None

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def wait_ready(self, timeout: float) -> None:
        if not self.pipe.poll(timeout):
            self.process.kill()
            raise ProcessPoolError(f"handler process {self.pid} did not start within {timeout:g} s")
        try:
            status, detail = self.pipe.recv()
        except EOFError:
            raise ProcessPoolError(f"handler process {self.pid} exited while starting") from None
        if status != "ready":
            raise ProcessPoolError(f"handler process {self.pid} could not start:\n{detail}")

    def begin(self, attempt: Attempt) -> None:
        with self._lock:
            self._running = attempt
            self.tasks += 1

    def end(self) -> None:
        with self._lock:
            self._running = None

    def stop(self, attempt: Attempt) -> None:
        """Stop the child if it still runs ``attempt`` (an on_cancel callback may run late, after the slot has
        moved on to the next attempt): the stop signal now, SIGKILL once the grace is over."""
        with self._lock:
            if self._running is not attempt or self._kill_at is not None:
                return
            self._kill_at = time.monotonic() + STOP_GRACE
        try:
            os.kill(self.pid, STOP_SIGNAL)
        except ProcessLookupError:  # already gone
            pass

    def escalate(self) -> None:
        if self._kill_at is not None and time.monotonic() >= self._kill_at and self.process.is_alive():
            log.warning("handler process %d ignored the stop signal for %g s: killing it", self.pid, STOP_GRACE)
            self.process.kill()

    @property
    def usable(self) -> bool:
        return self._kill_at is None and self.process.is_alive()

    def death(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is not None and code < 0:
            return f"handler process {self.pid} was killed by {signal.Signals(-code).name}"
        return f"handler process {self.pid} exited with code {code}"

    def close(self, timeout: float = 2.0) -> None:
        """Ask the child to exit, and kill it if it does not."""
        try:
            self.pipe.send(None)
        except OSError:
            pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.pipe.close()


class ProcessPool:
    """``size`` handler processes, each served by a thread of the worker that hands it one attempt at a time."""

    def __init__(
        self,
        size: int,
        registry: Registry,
        finish: Callable[[Attempt, Outcome], None],
        write: Callable[[Attempt, str, bytes], None],
        now: Callable[[], float],
        max_tasks_per_child: int | None = None,
    ) -> None:
        self.size = size
        self.finish, self.write, self.now = finish, write, now
        self.max_tasks_per_child = max_tasks_per_child
        self.handlers = {
            h.type: importable(h.func, f"handler {shown(h.type)}")
            for t in registry.types()
            if (h := registry.route(t)) is not None and not h.spark
        }
        self.middleware = [importable(m, "middleware") for m in registry.middleware]
        self.context = multiprocessing.get_context("forkserver")
        self.replaced = 0  # children replaced after a stop, a crash or max_tasks_per_child
        self._children: list[ChildProcess | None] = [None] * size
        self._jobs: queue.SimpleQueue[Attempt | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._serve, args=(slot,), name=f"handler-process-{slot + 1}", daemon=True)
            for slot in range(size)
        ]

    def start(self) -> None:
        """Start every child and wait until each has imported the handlers: a broken import fails the worker's
        start, not every task."""
        modules = sorted({module for module, _ in [*self.handlers.values(), *self.middleware]})
        # Only the first pool of a process decides what its forkserver preloads; a child imports what is missing.
        self.context.set_forkserver_preload(["taskq.worker.process_boot", *modules])
        self._children = [self._spawn() for _ in range(self.size)]
        for child in self._children:
            assert child is not None
            child.wait_ready(BOOT_TIMEOUT)
        for thread in self._threads:
            thread.start()

    def pids(self) -> list[int]:
        return [c.pid for c in self._children if c is not None and c.process.is_alive()]

    def submit(self, attempt: Attempt) -> None:
        self._jobs.put(attempt)

    def stop(self, timeout: float = 5.0) -> None:
        """After the processor's graceful stop: every attempt has ended, so the children are idle or being stopped."""
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout)
        for child in self._children:
            if child is not None:
                child.close()

    def _spawn(self) -> ChildProcess:
        return ChildProcess(self.context, self.handlers, self.middleware)

    def _serve(self, slot: int) -> None:
        while True:
            attempt = self._jobs.get()
            if attempt is None:
                return
            # The attempt's span is current here too, so what this thread logs for it carries its ids.
            token = None if attempt.span is None else attempt.span.attach()
            try:
                child = self._child(slot)
                outcome = self._run(child, attempt)
            except Exception as exc:  # no child could be started: the attempt fails like any other
                log.exception("handler process slot %d failed", slot + 1)
                outcome = attempt.failure(exc, self.now())
            finally:
                detach(token)
            self.finish(attempt, outcome)

    def _child(self, slot: int) -> ChildProcess:
        """The slot's child, replaced first when it was stopped, died or ran its quota of tasks."""
        child = self._children[slot]
        spent = self.max_tasks_per_child is not None and child is not None and child.tasks >= self.max_tasks_per_child
        if child is not None and child.usable and not spent:
            return child
        if child is not None:
            child.close()
            self.replaced += 1
        child = self._children[slot] = self._spawn()
        child.wait_ready(BOOT_TIMEOUT)
        return child

    def _run(self, child: ChildProcess, attempt: Attempt) -> Outcome:
        if attempt.claimed:  # interrupted before a slot got to it: do not start it at all
            return Outcome("drop")
        assert attempt.handler is not None
        if attempt.handler.type not in self.handlers:
            return attempt.failure(
                LookupError(
                    f"handler {shown(attempt.handler.type)} was registered "
                    "after the worker started its handler processes"
                ),
                self.now(),
            )
        child.begin(attempt)
        remove = attempt.task.on_cancel(lambda: child.stop(attempt))  # runs at once if already cancelled
        try:
            carrier = None if attempt.span is None else attempt.span.carrier()  # the child makes it current
            child.pipe.send((attempt.task.message, attempt.task.retried, attempt.handler.type, carrier))
            return self._await(child, attempt)
        except OSError:  # the pipe broke: the child is gone
            return self._died(child, attempt)
        finally:
            remove()
            child.end()

    def _await(self, child: ChildProcess, attempt: Attempt) -> Outcome:
        while True:
            ready = wait([child.pipe, child.process.sentinel], timeout=POLL)
            if child.pipe in ready:  # read what it said before looking at whether it died
                try:
                    message = child.pipe.recv()
                except (EOFError, OSError):
                    return self._died(child, attempt)
                if message[0] == "write":
                    self._write(child.pipe, attempt, message[1], message[2])
                elif message[0] == "done":
                    return Outcome("success")
                else:
                    return self._failed(attempt, message[1], message[2], message[3])
            elif ready:
                return self._died(child, attempt)
            else:
                child.escalate()

    def _write(self, pipe: Connection, attempt: Attempt, field: str, value: bytes) -> None:
        """A child's write_result or progress, fenced by the attempt's lease like any other."""
        reply: tuple[str, Any] = ("ok", None)
        try:
            if field not in WRITABLE:
                raise ValidationError(f"a handler process may write {WRITABLE}, not {shown(field)}", op="write_result")
            self.write(attempt, field, value)
        except Exception as exc:
            reply = ("error", portable(exc))
        try:
            pipe.send(reply)
        except OSError:  # it died while we wrote: the next wait sees it
            pass

    def _failed(self, attempt: Attempt, error: str, exc: BaseException, failure: Failure) -> Outcome:
        outcome = attempt.failure(exc, self.now(), failure)
        outcome.error = error  # the child's own description, also when the exception itself could not cross
        log.info("task %s (%s) failed: %s", attempt.id, attempt.task.type, error)
        return outcome

    def _died(self, child: ChildProcess, attempt: Attempt) -> Outcome:
        how = child.death()
        if attempt.claimed:  # we stopped it: whoever ended the attempt has written its outcome
            if child.process.exitcode not in (STOPPED_EXIT_CODE, -signal.SIGKILL):
                log.info("task %s: %s after its attempt ended", attempt.id, how)
            return Outcome("drop")
        log.warning("task %s (%s): %s", attempt.id, attempt.task.type, how)
        return attempt.failure(HandlerProcessDied(how), self.now())
