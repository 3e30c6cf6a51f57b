"""``taskworker --processes N``: N worker processes under one supervisor, for handlers that need more than one
core (one Python process runs Python code on one core at a time, whatever its concurrency).

Each child is the same ``taskworker`` command line with ``--processes 1``: its own fetch loop, acknowledgements,
heartbeat and server entry (``tasks server ls`` and the Servers page list each one). Child ``i`` (from 0) serves
its metrics and health ports at the given port + ``i``, so the ports never collide.

The supervisor only starts, watches and stops processes:

- a child that exits while the supervisor runs is started again; one that dies within ``STABLE_AFTER`` seconds of
  its start counts towards a crash loop, which is logged and backs off (0.5 s, doubling, at most 30 s) until a
  child stays up;
- SIGTERM or SIGINT is passed on to every child as SIGTERM, once: each finishes its running tasks within its
  shutdown timeout; the supervisor waits for them, then kills what is left;
- children run in a session of their own (a terminal's Ctrl-C reaches only the supervisor, which passes it on
  once) and are told by the kernel to stop (SIGTERM, ``PR_SET_PDEATHSIG``) when the supervisor dies, even by
  SIGKILL, so none is left fetching without it.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from taskq.queues.engine.quoting import shown

log = logging.getLogger("taskq.worker.supervisor")

#: The variable that tells a child its index, for its port offsets.
PROCESS_INDEX_VARIABLE = "TASKQ_WORKER_PROCESS"
STABLE_AFTER = 10.0
FIRST_DELAY = 0.5
MAX_DELAY = 30.0
PR_SET_PDEATHSIG = 1


def process_count(text: str) -> int:
    """``--processes``: a whole number from 1 to 256, or ``auto`` (the number of CPUs). Raises ValueError."""
    if text == "auto":
        return os.cpu_count() or 1
    try:
        count = int(text, 10)
    except ValueError:
        raise ValueError(f"--processes takes a whole number or 'auto', got {shown(text)}") from None
    if not 1 <= count <= 256:
        raise ValueError(f"--processes must be between 1 and 256, got {count}")
    return count


def process_index() -> int:
    """This process's index under a supervisor (0 when there is none)."""
    return supervised_index() or 0


def supervised_index() -> int | None:
    """This process's index under a supervisor, None when there is none."""
    value = os.environ.get(PROCESS_INDEX_VARIABLE, "")
    return int(value) if value.isdigit() else None


def child_arguments(argv: Sequence[str]) -> list[str]:
    """The supervisor's own command line (``sys.argv``) with ``--processes`` set to 1."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--processes":
            skip = True
        elif not arg.startswith("--processes="):
            out.append(arg)
    return [*out, "--processes", "1"]


@dataclass
class RestartPolicy:
    """How long to wait before starting a child again: nothing after a child that ran ``STABLE_AFTER`` seconds,
    else a delay that doubles with each quick death in a row."""

    quick_deaths: int = 0

    def delay_after(self, lived: float) -> float:
        if lived >= STABLE_AFTER:
            self.quick_deaths = 0
            return 0.0
        self.quick_deaths += 1
        return float(min(MAX_DELAY, FIRST_DELAY * 2 ** (self.quick_deaths - 1)))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    index: int
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    restart_at: float | None = None  # once it has exited: when to start it again (monotonic)


class Supervisor:
    def __init__(
        self,
        command: Sequence[str],
        processes: int,
        shutdown_timeout: float,
        *,
        spawn: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
    ) -> None:
        self.command = list(command)
        self.processes = processes
        self.shutdown_timeout = shutdown_timeout
        self.spawn = spawn
        self.children: dict[int, Child] = {}
        self.policies = [RestartPolicy() for _ in range(processes)]
        self.stopping = threading.Event()

    def start_child(self, index: int) -> None:
        env = {**os.environ, PROCESS_INDEX_VARIABLE: str(index)}
        proc = self.spawn(
            self.command,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        self.children[index] = Child(index, proc)
        log.info("started worker process %d (pid %d)", index, proc.pid)

    def watch_once(self) -> None:
        """Start again each child that exited, once its back-off delay has passed. Each child's delay runs on its
        own: one in a crash loop does not hold back the restart of another."""
        now = time.monotonic()
        for index, child in list(self.children.items()):
            code = child.proc.poll()
            if code is None or self.stopping.is_set():
                continue
            if child.restart_at is None:
                lived = now - child.started
                delay = self.policies[index].delay_after(lived)
                child.restart_at = now + delay
                if delay:
                    log.warning(
                        "worker process %d (pid %d) exited with %s after %.1f s: crash loop, %d in a row; starting it "
                        "again in %.1f s",
                        index,
                        child.proc.pid,
                        code,
                        lived,
                        self.policies[index].quick_deaths,
                        delay,
                    )
                else:
                    log.warning(
                        "worker process %d (pid %d) exited with %s; starting it again", index, child.proc.pid, code
                    )
            if now >= child.restart_at:
                self.start_child(index)

    def stop(self) -> None:
        """SIGTERM to every child, a wait for all of them (their shutdown timeout and some), then SIGKILL."""
        self.stopping.set()
        for child in self.children.values():
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.shutdown_timeout + 10
        for child in self.children.values():
            try:
                child.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("worker process %d (pid %d) did not stop in time: killed", child.index, child.proc.pid)
                child.proc.kill()
                child.proc.wait()

    def run(self) -> None:
        """Start every child, watch them until SIGTERM or SIGINT, then stop them all."""

        def on_signal(signum: int, _frame: object) -> None:
            log.info("received %s: stopping %d worker processes", signal.Signals(signum).name, len(self.children))
            self.stopping.set()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for index in range(self.processes):
                self.start_child(index)
            while not self.stopping.wait(0.2):
                self.watch_once()
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
